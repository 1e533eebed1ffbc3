/**
 * `virtctl port-forward [vmi/|vm/]NAME[.NAMESPACE] [LOCAL:]REMOTE...` in local mode:
 * listens on a loopback port and opens, per connection, a stream to the guest's REMOTE
 * port through the local API (pod-port-relay.ts). `virtctl ssh`/`scp` are not implemented;
 * the system ssh client can go through a forwarded port (`ssh -p LOCAL user@127.0.0.1`).
 * On a cluster it needs upstream's websocket subresource, which this CLI does not speak.
 */
import { createServer, type Server } from 'node:net';
import type { Command } from 'commander';
import { openPortForward } from '../../local/local-client';
import { printable } from '../../local/progress';
import { type TargetOptions, withTarget, withTargetOptions } from './target';

/** One forwarded port. */
export interface PortMapping {
  local: number;
  remote: number;
}

/** Parses `[LOCAL:]REMOTE[/tcp]` (upstream's syntax); LOCAL 0 picks a free port. */
export function parsePortMapping(text: string): PortMapping {
  const m = /^(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/i.exec(text);
  if (!m) throw new Error(`port ${JSON.stringify(text)}: expected [LOCAL:]REMOTE[/tcp]`);
  if (m[3]?.toLowerCase() === 'udp')
    throw new Error(`port ${JSON.stringify(text)}: UDP forwarding is not supported`);
  const remote = Number(m[2]);
  const local = m[1] === undefined ? remote : Number(m[1]);
  if (remote < 1 || remote > 65535 || local > 65535)
    throw new Error(`port ${JSON.stringify(text)}: out of range`);
  return { local, remote };
}

/** Parses `[vmi/|vm/]NAME[.NAMESPACE]`; a VM forwards to its VMI (same name). */
export function parseForwardTarget(
  text: string,
  defaultNamespace: string,
): { name: string; namespace: string } {
  const m =
    /^(?:(vmi|vm|virtualmachineinstance|virtualmachine)\/)?([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.([a-z0-9-]{1,63}))?$/.exec(
      text,
    );
  if (!m) throw new Error(`target ${JSON.stringify(text)}: expected [vmi/|vm/]NAME[.NAMESPACE]`);
  return { name: m[2] as string, namespace: m[4] ?? defaultNamespace };
}

/** Listens on `address:local` and forwards each connection to the guest; resolves once listening. */
export async function forwardPort(
  apiSocket: string,
  target: { name: string; namespace: string },
  map: PortMapping,
  address = '127.0.0.1',
  log: (m: string) => void = () => {},
): Promise<Server> {
  const server = createServer((conn) => {
    openPortForward(apiSocket, target.namespace, target.name, map.remote).then(
      (up) => {
        conn.pipe(up).pipe(conn);
        up.on('error', () => conn.destroy());
        conn.on('error', () => up.destroy());
      },
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

/** Registers `port-forward`. */
export function registerPortForwardCommand(program: Command): void {
  withTargetOptions(
    program
      .command('port-forward')
      .description("forward loopback ports to a VMI's guest ports (local mode)")
      .argument('<target>', '[vmi/|vm/]NAME[.NAMESPACE]')
      .argument('<ports...>', '[LOCAL:]REMOTE')
      .option('--address <ip>', 'local address to listen on', '127.0.0.1'),
  ).action((targetText: string, ports: string[], o: TargetOptions & { address: string }) =>
    withTarget(o, async (t) => {
      if (!t.local)
        throw new Error(
          "port-forward over a kubeconfig needs KubeVirt's websocket subresource, which this CLI does not speak yet",
        );
      if (o.address !== '127.0.0.1' && o.address !== 'localhost' && o.address !== '::1')
        throw new Error(`--address: ${JSON.stringify(o.address)}: only loopback addresses are served`);
      const target = parseForwardTarget(targetText, t.namespace);
      const servers: Server[] = [];
      for (const p of ports.map(parsePortMapping)) {
        const s = await forwardPort(t.local.paths.apiSocket, target, p, o.address, (m) =>
          process.stderr.write(`${m}\n`),
        );
        const addr = s.address();
        const bound = typeof addr === 'object' && addr ? addr.port : p.local;
        process.stdout.write(
          `Forwarding from ${o.address}:${bound} -> ${printable(target.name)}:${p.remote}\n`,
        );
        servers.push(s);
      }
      await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
      for (const s of servers) s.close();
    }),
  );
}
