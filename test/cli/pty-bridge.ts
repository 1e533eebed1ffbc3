/**
 * Runs a command inside a pseudo-terminal through python3's pty module (node-pty is a
 * native addon, which the project does not allow): the command sees a real terminal on
 * stdin/stdout; the test writes keystrokes and reads what the terminal shows.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';

const BRIDGE = `
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
inputs = [0]
while True:
    r, _, _ = select.select([fd] + inputs, [], [])
    if fd in r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        os.write(1, data)
    if 0 in r:
        data = os.read(0, 4096)
        if not data:
            inputs = []
        else:
            os.write(fd, data)
_, st = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(st))
`;

/** Whether python3 with its pty module is here. */
export function ptyAvailable(): boolean {
  return spawnSync('python3', ['-c', 'import pty'], { stdio: 'ignore' }).status === 0;
}

/** A command running in a pseudo-terminal. */
export class PtySession {
  output = '';
  private readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number>;

  constructor(argv: string[]) {
    this.child = spawn('python3', ['-c', BRIDGE, ...argv]);
    this.child.stdout.on('data', (c: Buffer) => {
      this.output += c.toString('utf8');
    });
    this.child.stderr.on('data', (c: Buffer) => {
      this.output += c.toString('utf8');
    });
    this.exited = new Promise((r) => this.child.on('exit', (code) => r(code ?? -1)));
  }

  /** Types `text` into the terminal. */
  type(text: string): void {
    this.child.stdin.write(text);
  }

  /** Resolves once the terminal has shown `text` (after `from`), else rejects after `timeoutMs`. */
  async waitFor(text: string, timeoutMs = 60_000, from = 0): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!this.output.slice(from).includes(text)) {
      if (Date.now() > end)
        throw new Error(
          `terminal never showed ${JSON.stringify(text)}; it showed:\n${this.output.slice(-2000)}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}
