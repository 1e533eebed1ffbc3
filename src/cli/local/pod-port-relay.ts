/**
 * Port forwarding into a launcher pod in local mode (upstream's VMI `portforward`
 * subresource, served by virt-handler on a cluster). The host has no route to the pod
 * network (the node bridge has no address), so each forwarded connection is relayed by a
 * small node process started inside the pod's network namespace (`nsenter --net`), which
 * connects to the guest from there: for masquerade the guest's address behind the pod's
 * bridge (10.0.2.2), reached directly, as upstream's handler dials the guest.
 */
import { spawn } from 'node:child_process';
import { Duplex } from 'node:stream';
import { readNetworkCache } from '../../controllers/common/network-cache';

// Runs in the pod's namespace: stdin -> the guest's port -> stdout, half-closes passed on
// (allowHalfOpen: a guest that closes its side first still gets the rest of stdin).
// No process.exit: it would drop stdout not yet flushed; the process ends when both sides have.
const RELAY =
  "const [h,p]=process.argv.slice(1);const c=require('net').connect({host:h,port:+p,allowHalfOpen:true});process.stdin.pipe(c);c.pipe(process.stdout);c.on('error',e=>{process.stderr.write(e.message);process.exitCode=1;process.stdin.destroy()})";

/** Where in the pod a forwarded port reaches the guest; throws when the binding has no way yet. */
export async function guestAddressFor(socketDir: string, subject: string): Promise<string> {
  const cache = await readNetworkCache(socketDir);
  const iface = cache?.interfaces[0];
  if (!iface) throw new Error(`${subject}: the VMI has no pod network interface set up to forward to`);
  if (iface.binding === 'masquerade') return iface.guestIP;
  throw new Error(
    `${subject}: port-forward to a VMI on the ${iface.binding} binding is not supported in local mode yet (masquerade is)`,
  );
}

/**
 * Pipes `conn` to `host:port` inside the network namespace `netns`; resolves when both
 * sides closed. Each direction's end is passed on alone (TCP half-close), so `conn` must be
 * half-open capable (an http server's upgraded socket is). `log` gets the relay's error.
 */
export function relayIntoNetns(
  netns: string,
  host: string,
  port: number,
  conn: Duplex,
  log: (m: string) => void = () => {},
): Promise<void> {
  const child = spawn(
    'nsenter',
    [`--net=${netns}`, '--', process.execPath, '-e', RELAY, host, String(port)],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    if (err.length < 2000) err += d.toString('utf8');
  });
  conn.pipe(child.stdin);
  child.stdout.pipe(conn);
  child.stdin.on('error', () => undefined);
  const done = new Promise<void>((resolve) => {
    child.on('close', () => {
      if (err) log(`${host}:${port}: ${err.trim()}`);
      conn.end();
      resolve();
    });
  });
  conn.on('error', () => child.kill('SIGKILL'));
  conn.on('close', () => {
    if (child.exitCode === null) child.stdin.end();
  });
  return done;
}

/**
 * A connection to `host:port` made from inside the network namespace `netns` (the same
 * relay process as above), as a Duplex the caller can run TLS over: local mode's upload
 * proxy reaches an upload pod this way. A relay that fails (nothing listening) destroys
 * the stream with its message; destroying the stream ends the relay.
 */
export function dialInNetns(netns: string, host: string, port: number): Duplex {
  const child = spawn(
    'nsenter',
    [`--net=${netns}`, '--', process.execPath, '-e', RELAY, host, String(port)],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const stream = Duplex.from({ readable: child.stdout, writable: child.stdin });
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    if (err.length < 2000) err += d.toString('utf8');
  });
  child.stdin.on('error', () => undefined);
  child.on('error', (e) => stream.destroy(e));
  child.on('close', (code) => {
    if (code) stream.destroy(new Error(`${host}:${port} in ${netns}: ${err.trim() || `relay exit ${code}`}`));
  });
  stream.on('close', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return stream;
}
