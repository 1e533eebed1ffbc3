/**
 * Runs a host tool (ip, nft, nsenter, sysctl) with an argument array: never a shell, so
 * no value is ever parsed as shell syntax. Errors carry the tool's stderr.
 */
import { execFile } from 'node:child_process';

/** Runs `cmd args...` (optionally with `input` on stdin) and returns stdout. */
export function runTool(cmd: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      if (err) {
        const detail = String(stderr || err.message).trim();
        reject(new Error(`${cmd} ${args.join(' ')}: ${detail}`));
      } else resolve(String(stdout));
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Runs a tool inside the network namespace at `netnsPath` (nsenter switches only the netns). */
export function runInNetns(netnsPath: string, cmd: string, args: string[], input?: string): Promise<string> {
  return runTool('nsenter', [`--net=${netnsPath}`, '--', cmd, ...args], input);
}
