/**
 * Listening on a unix socket only its owner can open: made under umask 0177, so it is
 * never wider even for a moment, then set to mode 0600 explicitly.
 */
import fs from 'node:fs';
import type { Server } from 'node:net';

/** Starts `server` listening on `socketPath` with mode 0600; rejects on a listen error. */
export async function listenOwnerOnly(server: Server, socketPath: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const old = process.umask(0o177);
    try {
      server.listen(socketPath, () => resolve());
    } finally {
      process.umask(old);
    }
  });
  fs.chmodSync(socketPath, 0o600);
}
