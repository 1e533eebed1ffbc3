/**
 * A loopback TCP port for a process a test starts (etcd, kube-apiserver, a component's
 * metrics server), found free and closed again for that process to bind.
 *
 * Why not `listen(0)`: the kernel hands out those ports from the ephemeral range, the same
 * range it takes the source ports of outgoing connections from. Between closing the probe
 * and the child's bind, any of the run's many loopback clients may be given that port,
 * and the child dies with "address already in use" (a CI run lost a control plane that
 * way). Ports are picked at random below the ephemeral range instead, where the kernel
 * never assigns one by itself, and each is probed before it is returned.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Bottom of the pool; the top is just below the ephemeral range (and below NodePorts' 30000). */
const LOW = 20_000;

function ephemeralStart(): number {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    if (Number.isInteger(first) && first > LOW + 1000) return Math.min(first, 30_000);
  } catch {
    // Not Linux: the probe below still guards against a port in use.
  }
  return 30_000;
}

const HIGH = ephemeralStart();

function probe(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A free loopback TCP port outside the kernel's ephemeral range (closed again, for a child to bind). */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (await probe(port)) return port;
  }
  throw new Error(`no free loopback port in ${LOW}-${HIGH - 1} after 200 tries`);
}
