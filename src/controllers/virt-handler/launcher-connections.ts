/**
 * The node agent's connections to the launchers on its node, one per launcher pod: a
 * command client on the pod's `launcher-sock` and a notify pipe in the same sockets
 * directory forwarding the launcher's events to the agent's notify server (upstream's
 * domain-notify-pipe). The pipe (mode 0600) belongs to the launcher's user, the owner of
 * its `launcher-sock`: a non-root launcher (107) could not connect to a root one, as
 * upstream's handler gives a non-root VMI's pipe to the qemu user.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { type SocketProxy, serveSocketProxy } from '../common/socket-proxy';
import { LauncherClient, launcherSocketPath } from '../launcher-protocol';
import { NOTIFY_PIPE_SOCKET } from '../launcher-protocol/paths';
import { shortDir } from '../launcher-protocol/short-dir';

interface Connection {
  client: LauncherClient;
  pipe?: SocketProxy;
  piping?: Promise<void>;
}

/** Launcher clients and notify pipes by pod uid. */
export class LauncherConnections {
  private readonly byPod = new Map<string, Connection>();

  constructor(
    private readonly podsRoot: string,
    private readonly notifySocket: string,
    private readonly timeoutMs = 30_000,
  ) {}

  /** The launcher socket path of a pod (kubelet's emptyDir layout under the pods root). */
  socketPath(podUid: string): string {
    const path = launcherSocketPath(this.podsRoot, podUid);
    // Through the same short link the launcher binds by, when the real path is too long.
    return join(shortDir(dirname(path)), basename(path));
  }

  /** Whether the pod's launcher has put its socket in place (it is renamed there once serving). */
  socketExists(podUid: string): boolean {
    return existsSync(this.socketPath(podUid));
  }

  /** The client of a pod's launcher; also makes sure its notify pipe exists. */
  async get(podUid: string): Promise<LauncherClient> {
    let c = this.byPod.get(podUid);
    if (!c) {
      c = { client: new LauncherClient(this.socketPath(podUid), { timeoutMs: this.timeoutMs }) };
      this.byPod.set(podUid, c);
    }
    if (!c.pipe && !c.piping) {
      const dir = dirname(this.socketPath(podUid));
      if (existsSync(dir)) {
        const conn = c;
        conn.piping = stat(this.socketPath(podUid))
          .then(
            (st) => ({ uid: st.uid, gid: st.gid }),
            () => undefined,
          )
          .then((owner) => serveSocketProxy(join(dir, NOTIFY_PIPE_SOCKET), this.notifySocket, owner))
          .then((p) => {
            conn.pipe = p;
          })
          .catch(() => undefined)
          .finally(() => {
            conn.piping = undefined;
          });
        await conn.piping;
      }
    }
    return c.client;
  }

  /** Pod uids with a connection. */
  pods(): string[] {
    return [...this.byPod.keys()];
  }

  /** Drops a pod's connection (its launcher is gone). */
  async drop(podUid: string): Promise<void> {
    const c = this.byPod.get(podUid);
    if (!c) return;
    this.byPod.delete(podUid);
    c.client.close();
    await c.piping;
    await c.pipe?.close().catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    for (const uid of this.pods()) await this.drop(uid);
  }
}
