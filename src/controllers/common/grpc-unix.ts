/**
 * gRPC servers on unix sockets, as the node-local protocols are served (CSI, the launcher's
 * command and notify sockets, kubelet plugin registration, device plugins): no TLS, the
 * socket's file mode and directory guard it.
 */
import { rm } from 'node:fs/promises';
import { type Server, ServerCredentials } from '@grpc/grpc-js';

/** Binds `server` to the unix socket at `path`. */
export function bindUnixSocket(server: Server, path: string): Promise<void> {
  return new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${path}`, ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
}

/** A served socket: `close()` shuts the server down gracefully and removes the socket file. */
export interface UnixSocketServer {
  socketPath: string;
  close(): Promise<void>;
}

/** The handle of `server`, bound at `socketPath`. */
export function unixSocketServer(server: Server, socketPath: string): UnixSocketServer {
  return {
    socketPath,
    close: async () => {
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await rm(socketPath, { force: true });
    },
  };
}
