/**
 * A unix socket that forwards each connection to another unix socket: how the launcher
 * exposes QEMU's VNC socket (in its private directory) in the pod's sockets directory,
 * and how the node agent gives each launcher a notify socket in that same directory.
 */
import { chmod, chown, rm } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';

/** A running proxy. */
export interface SocketProxy {
  readonly listenPath: string;
  close(): Promise<void>;
}

/**
 * Serves `listenPath` (mode 0600, owned by `owner` when given: the one process that is
 * to connect); each connection is piped to `targetPath`.
 */
export async function serveSocketProxy(
  listenPath: string,
  targetPath: string,
  owner?: { uid: number; gid: number },
): Promise<SocketProxy> {
  await rm(listenPath, { force: true });
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPath);
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPath, () => resolve());
  });
  await chmod(listenPath, 0o600);
  if (owner) await chown(listenPath, owner.uid, owner.gid);
  return {
    listenPath,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(listenPath, { force: true });
    },
  };
}
