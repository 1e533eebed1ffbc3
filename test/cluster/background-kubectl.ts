/** kubectl run in the background by the cluster cases (drain-case.ts), and output tails. */
import { type ChildProcess, spawn } from 'node:child_process';
import { kubectlBin } from '../support/cluster-pods';

/** kubectl in the background: its output so far, its exit code once it ended. */
export function run(args: string[]) {
  const child: ChildProcess = spawn(kubectlBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let code: number | undefined;
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  child.once('exit', (c) => {
    code = c ?? -1;
  });
  return {
    out: () => out,
    code: () => code,
    kill: () => {
      if (code === undefined) child.kill();
    },
  };
}

export const tail = (s: string, n = 15) => s.split('\n').slice(-n).join('\n');
