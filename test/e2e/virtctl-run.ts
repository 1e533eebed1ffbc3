/**
 * Runs the built virtctl (`dist/cli/virtctl.js`) as a child process without blocking the
 * event loop: the e2e tests run local mode in their own process, which must keep serving
 * the store and API sockets the CLI talks to meanwhile.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { defaultCliEntry } from '../../src/controllers/local/pod-runtime/pod-runtime';

/** The CLI's exit code and its stdout then stderr. */
export function virtctl(args: string[], timeoutMs = 600_000): Promise<{ code: number; out: string }> {
  const entry = join(defaultCliEntry(), '..', 'virtctl.js');
  return new Promise((resolve) => {
    execFile(process.execPath, [entry, ...args], { timeout: timeoutMs }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}
