/**
 * The migration proxies' end-of-stream check (migration-proxy.test.ts over TLS,
 * migration-relay.test.ts through the kernel relay): a target launcher socket that sends
 * 4 MiB nobody reads and reads slowly itself, so that when the client's end reaches the
 * source proxy its TCP socket holds unread bytes and unsent ones. Closing that socket then
 * resets the connection and drops the unsent tail; passing the end on keeps it.
 */
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type Server } from 'node:net';

/** Listens on `path`; `received` resolves with the bytes read by the client's end. */
export async function backedUpLauncher(path: string): Promise<{ server: Server; received: Promise<number> }> {
  let done!: (n: number) => void;
  const received = new Promise<number>((r) => {
    done = r;
  });
  const server = createServer((s) => {
    let n = 0;
    s.on('error', () => {});
    s.write(randomBytes(4 << 20));
    s.pause();
    setTimeout(() => s.resume(), 500);
    s.on('data', (d) => {
      n += d.length;
    });
    s.on('end', () => done(n));
  });
  await new Promise<void>((r) => server.listen(path, r));
  return { server, received };
}

/** Writes `bytes` random bytes to the unix socket `path` and ends, reading nothing; returns `bytes`. */
export function sendAndEnd(path: string, bytes: number): number {
  const sock = createConnection(path);
  sock.on('error', () => {});
  sock.end(randomBytes(bytes));
  return bytes;
}
