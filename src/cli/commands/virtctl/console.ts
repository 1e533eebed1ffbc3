/**
 * `virtctl console VMI` and `virtctl vnc VMI`. In local mode both are unix sockets the
 * launcher serves: console attaches this terminal to the serial console (escape with
 * Ctrl-]); vnc prints the socket path, or with --proxy-only --port serves it on a
 * loopback TCP port for a VNC viewer. On a cluster they need upstream's websocket
 * subresources, which are not implemented here.
 */
import { createServer } from 'node:net';
import type { Command } from 'commander';
import { attachConsole, connectConsole } from '../../local/console-stream';
import { printable } from '../../local/progress';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

async function socketOf(t: Target, name: string, sub: 'console' | 'vnc'): Promise<string> {
  if (!t.local) {
    throw new Error(
      `${sub} over a kubeconfig needs KubeVirt's websocket subresource, which this CLI does not speak yet`,
    );
  }
  const r = await t.local.subresource<{ socket: string }>('GET', t.namespace, name, sub);
  return r.socket;
}

/** Registers console and vnc. */
export function registerConsoleCommands(program: Command): void {
  withTargetOptions(
    program
      .command('console')
      .description("attach to a VMI's serial console (escape with Ctrl-])")
      .argument('<vmi>')
      .option('--timeout <seconds>', 'wait this long for the console socket', '30'),
  ).action((name: string, o: TargetOptions & { timeout: string }) =>
    withTarget(o, async (t) => {
      const timeoutMs = Number(o.timeout) * 1000;
      if (!Number.isFinite(timeoutMs) || timeoutMs < 0)
        throw new Error(`--timeout: ${o.timeout} is not a number of seconds`);
      // As upstream, wait for the VMI to get its console (it may still be starting).
      const end = Date.now() + timeoutMs;
      let path: string;
      for (;;) {
        try {
          path = await socketOf(t, name, 'console');
          break;
        } catch (e) {
          if (Date.now() > end || !t.local) throw e;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      const sock = await connectConsole(path, Math.max(1_000, end - Date.now()));
      process.stderr.write(
        `Successfully connected to ${printable(name)} console. The escape sequence is ^]\n`,
      );
      await attachConsole(sock);
      sock.destroy();
      process.stderr.write('\n');
    }),
  );
  withTargetOptions(
    program
      .command('vnc')
      .description("print a VMI's VNC socket, or proxy it on a loopback port")
      .argument('<vmi>')
      .option('--proxy-only', 'serve the VNC socket on a loopback TCP port until Ctrl-C')
      .option('--port <port>', 'loopback port for --proxy-only (default: any free)', '0'),
  ).action((name: string, o: TargetOptions & { proxyOnly?: boolean; port: string }) =>
    withTarget(o, async (t) => {
      const path = await socketOf(t, name, 'vnc');
      if (!o.proxyOnly) {
        process.stdout.write(`${path}\n`);
        return;
      }
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new Error(`--port: ${o.port} is not a port`);
      const server = createServer((c) => {
        const s = connectConsole(path, 5_000);
        s.then(
          (up) => {
            c.pipe(up).pipe(c);
            up.on('error', () => c.destroy());
            c.on('error', () => up.destroy());
          },
          () => c.destroy(),
        );
      });
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
      const addr = server.address();
      process.stdout.write(`{"port": ${typeof addr === 'object' && addr ? addr.port : port}}\n`);
      await new Promise<never>(() => {});
    }),
  );
}
