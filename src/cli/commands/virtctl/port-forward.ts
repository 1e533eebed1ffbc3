/**
 * `virtctl port-forward [vmi/|vm/]NAME[.NAMESPACE|/NAMESPACE] [LOCAL:]REMOTE...` and
 * `--stdio` (one port on stdin/stdout, what `virtctl ssh` puts in ssh's ProxyCommand, as
 * upstream). Each forwarded connection opens one stream to the guest's port:
 * - local mode: an HTTP upgrade on the local API, relayed from inside the launcher pod's
 *   network namespace (`local/pod-port-relay.ts`); TCP half-closes are carried;
 * - a cluster (`--kubeconfig`): virt-api's websocket subresource
 *   `virtualmachineinstances/NAME/portforward/PORT/tcp` (`plain.kubevirt.io`), which dials
 *   the VMI's interface address, as upstream. A websocket has no half-close: the first end
 *   closes both directions, as upstream's virtctl does.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { type Duplex, finished } from 'node:stream';
import type { Command } from 'commander';
import { openPortForward } from '../../local/local-client';
import { printable } from '../../local/progress';
import { openClusterStream } from './cluster-stream';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

/** One forwarded port. */
export interface PortMapping {
  local: number;
  remote: number;
}

/** Opens one byte stream to the guest's TCP `port`. */
export type GuestPortOpener = (port: number) => Promise<Duplex>;

/** Parses `[LOCAL:]REMOTE[/tcp]` (also upstream's `tcp/LOCAL:REMOTE`); LOCAL 0 picks a free port. */
export function parsePortMapping(text: string): PortMapping {
  const m = /^(?:(tcp|udp)\/)?(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/i.exec(text);
  if (!m) throw new Error(`port ${JSON.stringify(text)}: expected [LOCAL:]REMOTE[/tcp]`);
  if (m[1]?.toLowerCase() === 'udp' || m[4]?.toLowerCase() === 'udp')
    throw new Error(`port ${JSON.stringify(text)}: UDP forwarding is not supported`);
  const remote = Number(m[3]);
  const local = m[2] === undefined ? remote : Number(m[2]);
  if (remote < 1 || remote > 65535 || local > 65535)
    throw new Error(`port ${JSON.stringify(text)}: out of range`);
  return { local, remote };
}

const KIND = /^(vmi|vmis|vm|vms|virtualmachineinstances?|virtualmachines?)$/;
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Parses `[vmi/|vm/]NAME[.NAMESPACE]` or upstream's `TYPE/NAME/NAMESPACE`; a VM forwards to
 * its VMI (same name).
 */
export function parseForwardTarget(
  text: string,
  defaultNamespace: string,
): { name: string; namespace: string } {
  const parts = text.split('/');
  const bad = () =>
    new Error(`target ${JSON.stringify(text)}: expected [vmi/|vm/]NAME[.NAMESPACE] or TYPE/NAME/NAMESPACE`);
  if (parts.length > 3 || (parts.length > 1 && !KIND.test(parts[0] as string))) throw bad();
  let name = parts.length === 1 ? (parts[0] as string) : (parts[1] as string);
  let namespace = parts[2];
  if (namespace === undefined) {
    const dot = name.indexOf('.');
    if (dot >= 0) {
      namespace = name.slice(dot + 1);
      name = name.slice(0, dot);
    }
  }
  if (!NAME.test(name) || name.length > 253) throw bad();
  if (namespace !== undefined && (!NAME.test(namespace) || namespace.length > 63)) throw bad();
  return { name, namespace: namespace ?? defaultNamespace };
}

/**
 * Pipes two byte streams both ways; each side's end is passed on alone (half-close) when
 * both are half-open capable. Resolves when both are done; an error destroys both. Either
 * may have ended already (a guest port that refused: the stream is closed on arrival).
 */
export function pipeStreams(a: Duplex, b: Duplex): Promise<void> {
  const one = (from: Duplex, to: Duplex) =>
    new Promise<void>((resolve) => {
      from.pipe(to);
      // pipe() never ends `to` for a source that ended before it was attached.
      if (from.readableEnded) to.end();
      finished(from, (err) => {
        if (err) {
          a.destroy();
          b.destroy();
        } else if (!to.writableEnded) to.end();
        resolve();
      });
    });
  return Promise.all([one(a, b), one(b, a)]).then(() => undefined);
}

/** Listens on `address:local` and forwards each connection to the guest; resolves once listening. */
export async function forwardPort(
  open: GuestPortOpener,
  map: PortMapping,
  address = '127.0.0.1',
  log: (m: string) => void = () => {},
): Promise<Server> {
  // allowHalfOpen: a client that ends its side still gets the guest's reply.
  const server = createServer({ allowHalfOpen: true }, (conn: Socket) => {
    conn.pause();
    open(map.remote).then(
      (up) => void pipeStreams(conn, up),
      (e: Error) => {
        log(e.message);
        conn.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(map.local, address, () => resolve());
  });
  return server;
}

/** Forwards `input`/`output` (the process's stdin/stdout) to one guest port; resolves when it ends. */
export async function forwardStdio(
  open: GuestPortOpener,
  port: number,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
): Promise<void> {
  const up = await open(port);
  input.pipe(up);
  up.pipe(output, { end: false });
  // Done when the guest side has no more to say (also when it had ended on arrival).
  await new Promise<void>((resolve) => {
    finished(up, { writable: false }, (err) => {
      if (err && err.code !== 'ERR_STREAM_PREMATURE_CLOSE')
        process.stderr.write(`port-forward: ${err.message}\n`);
      input.unpipe(up);
      resolve();
    });
  });
}

/** The stream opener of a target: the local API, or the cluster's websocket subresource. */
export function guestPortOpener(t: Target, target: { name: string; namespace: string }): GuestPortOpener {
  if (t.kubeConfig) {
    const kc = t.kubeConfig;
    return (port) => openClusterStream(kc, target.namespace, target.name, `portforward/${port}/tcp`);
  }
  const apiSocket = t.local?.paths.apiSocket;
  if (!apiSocket) throw new Error('port-forward: no local mode and no --kubeconfig');
  return (port) => openPortForward(apiSocket, target.namespace, target.name, port);
}

/** Registers `port-forward`. */
export function registerPortForwardCommand(program: Command): void {
  withTargetOptions(
    program
      .command('port-forward')
      .description("forward local ports (or stdin/stdout) to a VMI's guest ports")
      .argument('<target>', '[vmi/|vm/]NAME[.NAMESPACE] or TYPE/NAME/NAMESPACE')
      .argument('<ports...>', '[LOCAL:]REMOTE')
      .option('--address <ip>', 'local address to listen on', '127.0.0.1')
      .option('--stdio', 'forward stdin/stdout to the one port given (for ssh ProxyCommand)'),
  ).action((targetText: string, ports: string[], o: TargetOptions & { address: string; stdio?: boolean }) =>
    withTarget(o, async (t) => {
      const target = parseForwardTarget(targetText, t.namespace);
      const maps = ports.map(parsePortMapping);
      const open = guestPortOpener(t, target);
      if (o.stdio) {
        if (maps.length !== 1) throw new Error('--stdio: only one port supported when forwarding to stdout');
        await forwardStdio(open, (maps[0] as PortMapping).remote, process.stdin, process.stdout);
        process.stdin.destroy();
        return;
      }
      if (o.address !== '127.0.0.1' && o.address !== 'localhost' && o.address !== '::1')
        throw new Error(`--address: ${JSON.stringify(o.address)}: only loopback addresses are served`);
      const servers: Server[] = [];
      for (const p of maps) {
        const s = await forwardPort(open, p, o.address, (m) => process.stderr.write(`${m}\n`));
        const addr = s.address();
        const bound = typeof addr === 'object' && addr ? addr.port : p.local;
        process.stdout.write(
          `Forwarding from ${o.address}:${bound} -> ${printable(target.name)}:${p.remote}\n`,
        );
        servers.push(s);
      }
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      for (const s of servers) s.close();
    }),
  );
}
