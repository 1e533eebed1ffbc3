/**
 * `virtctl console VMI` and `virtctl vnc VMI`. In local mode both are unix sockets the
 * launcher serves: console attaches this terminal to the serial console (escape with
 * Ctrl-]); vnc prints the socket path, or with --proxy-only --port serves it on a
 * loopback TCP port for a VNC viewer. On a cluster (`--kubeconfig`) both are virt-api's
 * websocket subresources (`plain.kubevirt.io`), as upstream's virtctl opens them.
 * `vnc screenshot VMI --file F` writes the display as PNG (virt-api's `vnc/screenshot`).
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Command } from 'commander';
import { attachConsole, connectConsole } from '../../local/console-stream';
import { printable } from '../../local/progress';
import { openClusterStream } from './cluster-stream';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

async function socketOf(t: Target, name: string, sub: 'console' | 'vnc'): Promise<string> {
  if (!t.local) throw new Error(`${sub}: not in local mode`);
  const r = await t.local.subresource<{ socket: string }>('GET', t.namespace, name, sub);
  return r.socket;
}

/** A byte stream to the VMI's console or VNC: the local socket, or the cluster's websocket. */
function openStream(t: Target, name: string, sub: 'console' | 'vnc', timeoutMs: number): Promise<Duplex> {
  if (t.kubeConfig) return openClusterStream(t.kubeConfig, t.namespace, name, sub);
  return socketOf(t, name, sub).then((p) => connectConsole(p, timeoutMs));
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
      let sock: Duplex;
      for (;;) {
        try {
          sock = await openStream(t, name, 'console', Math.max(1_000, end - Date.now()));
          break;
        } catch (e) {
          if (Date.now() > end) throw e;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      process.stderr.write(
        `Successfully connected to ${printable(name)} console. The escape sequence is ^]\n`,
      );
      await attachConsole(sock);
      sock.destroy();
      process.stderr.write('\n');
    }),
  );
  const vnc = program.command('vnc');
  withTargetOptions(
    vnc
      .command('screenshot')
      .description("write the VMI's display as PNG")
      .argument('<vmi>')
      .requiredOption('-f, --file <file>', "where to write the PNG ('-': stdout)")
      .option('-m, --move-cursor', 'move the pointer first, to wake a screensaver'),
  ).action((name: string, own: TargetOptions & { file: string; moveCursor?: boolean }, cmd: Command) => {
    // `vnc` has the same target options: commander gives them to it when they follow the verb.
    const o = { ...own, ...cmd.optsWithGlobals() } as typeof own;
    return withTarget(o, async (t) => {
      if (!t.subresourceBytes) throw new Error('vnc screenshot: only on a cluster (--kubeconfig)');
      const shot = await t.subresourceBytes(t.namespace, name, 'vnc/screenshot', {
        moveCursor: o.moveCursor ? 'true' : 'false',
      });
      if (o.file === '-') process.stdout.write(shot.body);
      else writeFileSync(o.file, shot.body);
    });
  });
  withTargetOptions(
    vnc
      .description("print a VMI's VNC socket, or proxy it on a loopback port")
      .argument('<vmi>')
      .option('--proxy-only', 'serve the VNC socket on a loopback TCP port until Ctrl-C')
      .option('--port <port>', 'loopback port for --proxy-only (default: any free)', '0'),
  ).action((name: string, o: TargetOptions & { proxyOnly?: boolean; port: string }) =>
    withTarget(o, async (t) => {
      if (!o.proxyOnly) {
        if (t.kubeConfig)
          throw new Error('vnc on a cluster: use --proxy-only and point a VNC viewer at the port');
        process.stdout.write(`${await socketOf(t, name, 'vnc')}\n`);
        return;
      }
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new Error(`--port: ${o.port} is not a port`);
      const server = createServer((c) => {
        const s = openStream(t, name, 'vnc', 5_000);
        s.then(
          (up) => {
            c.pipe(up).pipe(c);
            up.on('error', () => c.destroy());
            c.on('error', () => up.destroy());
          },
          (e: Error) => {
            process.stderr.write(`${e.message}\n`);
            c.destroy();
          },
        );
      });
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
      const addr = server.address();
      process.stdout.write(`{"port": ${typeof addr === 'object' && addr ? addr.port : port}}\n`);
      await new Promise<never>(() => {});
    }),
  );
}
