/**
 * What both ways of running passt for a passtBinding interface share: the ports it
 * forwards (upstream's passt plugin: the declared ports by protocol, TCP and UDP whole when
 * none are declared) and, when the launcher starts passt itself (`passtBackend: 'qemu'`),
 * where its socket and pid file live. Pure, so the converter (the domain's side) and the
 * launcher (the process's side) compute the same values.
 */
import type { Interface as VMIInterface } from '../api/generated/types';

/** The ports passt forwards to the guest: both lists empty means every port of both protocols. */
export interface PasstPorts {
  tcp: number[];
  udp: number[];
}

/**
 * The interface's declared ports by protocol. `fail(path, message)` is called (and must
 * throw) for a port out of range or a protocol passt does not forward; `path` is the
 * interface's field path.
 */
export function passtPorts(
  iface: VMIInterface,
  path: string,
  fail: (path: string, message: string) => never,
): PasstPorts {
  const out: PasstPorts = { tcp: [], udp: [] };
  (iface.ports ?? []).forEach((p, i) => {
    const proto = (p.protocol ?? 'TCP').toUpperCase();
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535)
      fail(`${path}.ports[${i}].port`, `${JSON.stringify(p.port)} is not a port number (1-65535)`);
    if (proto === 'TCP') out.tcp.push(p.port);
    else if (proto === 'UDP') out.udp.push(p.port);
    else fail(`${path}.ports[${i}].protocol`, 'passt forwards TCP and UDP only');
  });
  return out;
}

/**
 * passt's `--tcp-ports`/`--udp-ports` arguments for `ports`, as libvirt's qemu_passt.c
 * builds them from `<portForward>`: a comma-separated list, `all` for a protocol forwarded
 * whole (what libvirt passes for a `<portForward>` without ranges).
 */
export function passtPortArgs(ports: PasstPorts): string[] {
  const all = ports.tcp.length + ports.udp.length === 0;
  const out: string[] = [];
  if (all || ports.tcp.length) out.push('--tcp-ports', all ? 'all' : ports.tcp.join(','));
  if (all || ports.udp.length) out.push('--udp-ports', all ? 'all' : ports.udp.join(','));
  return out;
}

/** The socket of the launcher's passt, in the VMI's private directory (`<privateDir>/<uid>`). */
export function passtSocketPath(vmiPrivateDir: string): string {
  return `${vmiPrivateDir}/passt.sock`;
}

/** The pid file of the launcher's passt, next to its socket. */
export function passtPidPath(vmiPrivateDir: string): string {
  return `${vmiPrivateDir}/passt.pid`;
}
