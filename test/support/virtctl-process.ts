import { spawn } from 'node:child_process';

/**
 * Runs the built virtctl (`virtctl` is its script) against a local-mode state dir in a
 * child process, asynchronously: the local API it talks to is served by the calling test
 * process. Resolves with its stdout; rejects with the tail of its stderr when it exits
 * non-zero, or is killed after `timeoutMs`.
 */
export function runVirtctl(
  virtctl: string,
  stateDir: string,
  args: string[],
  timeoutMs = 180_000,
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [virtctl, ...args, '--state-dir', stateDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(t);
      if (code === 0) resolve(out);
      else reject(new Error(`virtctl ${args[0]} exited ${code}: ${err.slice(-1000)}`));
    });
  });
}
