/**
 * One leg of the migration proxy (upstream's migrationProxy): libvirt and QEMU in the
 * launcher pods speak over unix sockets; the handlers carry each connection between the
 * nodes over TCP, TLS unless the cluster's migration configuration disables it.
 *
 *   source pod (unix socket) <-> source handler (TLS client) <-> target handler (TLS server) <-> target pod (unix socket)
 *
 * A source proxy listens on a unix socket and dials the target's TCP address for each
 * connection; a target proxy listens on TCP and dials the target launcher's unix socket.
 * Connections are carried by relay processes when the handler has them (relay.ts: the
 * kernel's splice for plain ones, OpenSSL for TLS ones); by Node otherwise.
 */
import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import {
  type ConnectionOptions,
  createServer as createTlsServer,
  type TLSSocket,
  connect as tlsConnect,
} from 'node:tls';
import { VIRT_API_CLIENT_CN } from '../client-identity';
import { relayConnection, relayOnConnect } from './relay';
import {
  clientIdentityRefusal,
  clientTlsOptions,
  HANDLER_NODE_CN,
  type MigrationTlsMaterial,
  serverCertificateRefusal,
  serverTlsOptions,
} from './tls';

/** One running proxy. */
export interface MigrationProxy {
  /** The unix socket a source proxy listens on. */
  readonly unixPath?: string;
  /** The TCP port a target proxy listens on. */
  readonly port?: number;
  /** Where each connection goes (unix path, or host:port). */
  readonly target: string;
  /** Bytes carried each way so far. */
  readonly bytes: { out: number; in: number };
  stop(): Promise<void>;
}

type Log = (message: string) => void;

/** A proxy's open connections (sockets, or relay processes), ended by stop(). */
type Open = Set<{ destroy(): void; exited?: Promise<void> }>;

/**
 * How long a connection stays open after one direction ended cleanly, for the other to
 * end too (the relay's figure, migration-relay.c).
 */
const END_GRACE_MS = 5_000;

/**
 * Pipes two sockets both ways in Node. A failure on either side ends both at once; a clean
 * end is passed on (a half-close: FIN after every byte queued, the sockets are half-open)
 * and the other direction gets {@link END_GRACE_MS} to end too. Destroying a TCP socket
 * that still holds unread bytes resets it and drops the bytes it had not sent yet: the
 * tail of a migration stream. TCP sides send at once (TCP_NODELAY, Go's default for
 * upstream's proxy): the switch-over's small messages (the last device state, the NBD
 * mirror's completion, libvirt's handshake) must not wait for Nagle's algorithm while the
 * guest is paused (a no-op on unix sockets).
 */
function pipeBoth(a: Socket, b: Socket, counts: { out: number; in: number }, open: Open): void {
  a.setNoDelay(true);
  b.setNoDelay(true);
  open.add(a);
  open.add(b);
  a.on('data', (d: Buffer) => {
    counts.out += d.length;
  });
  b.on('data', (d: Buffer) => {
    counts.in += d.length;
  });
  a.pipe(b);
  b.pipe(a);
  let grace: NodeJS.Timeout | undefined;
  const end = () => {
    clearTimeout(grace);
    a.destroy();
    b.destroy();
    open.delete(a);
    open.delete(b);
  };
  const ended = () => {
    grace ??= setTimeout(end, END_GRACE_MS);
  };
  a.on('end', ended);
  b.on('end', ended);
  // Both directions done: each socket closes by itself once it has ended both ways.
  const closed = () => {
    if (a.destroyed && b.destroyed) end();
  };
  a.on('close', closed);
  b.on('close', closed);
  a.on('error', end);
  b.on('error', end);
}

/** tls.connect honours allowHalfOpen (it hands it to its TLSSocket); Node's types omit it. */
function halfOpen(options: ConnectionOptions): ConnectionOptions {
  const withHalfOpen: ConnectionOptions & { allowHalfOpen: boolean } = { ...options, allowHalfOpen: true };
  return withHalfOpen;
}

function listening(server: Server, listen: (cb: () => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    listen(() => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * stop(): ends every connection (the accepted ones too, whatever state they are in: a
 * half-open socket never closes by itself) and the listener.
 */
function stopper(server: Server, open: Open, after?: () => void) {
  const accepted = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    accepted.add(s);
    s.once('close', () => accepted.delete(s));
  });
  return () =>
    new Promise<void>((resolve) => {
      const exits = [...open].map((c) => c.exited);
      for (const s of [...open, ...accepted]) s.destroy();
      open.clear();
      // Relays report their last counts as they exit: the counts are final when stop() resolves.
      server.close(() => {
        void Promise.all(exits).then(() => {
          after?.();
          resolve();
        });
      });
    });
}

/** Options of {@link startSourceProxy}. */
export interface SourceProxyOptions {
  /** The unix socket to create (its directory is made). */
  unixPath: string;
  /** The target handler's listener. */
  host: string;
  port: number;
  /** Client material; undefined when TLS is disabled. */
  tls?: () => MigrationTlsMaterial;
  /** Owner of the socket (the launcher's user must connect to it). */
  owner?: { uid: number; gid: number };
  /** The kernel-copy relay for plain connections (relay.ts); undefined: Node copies. */
  relay?: string;
  /** The OpenSSL relay for TLS connections (relay.ts); undefined: Node's TLS. */
  tlsRelay?: string;
  log?: Log;
}

/** A unix socket on the source node whose connections go to the target node's proxy. */
export async function startSourceProxy(o: SourceProxyOptions): Promise<MigrationProxy> {
  const log = o.log ?? (() => {});
  const open: Open = new Set();
  const bytes = { out: 0, in: 0 };
  const target = `${o.host}:${o.port}`;
  // Paused from the accept: a relay must get every byte, so Node reads none before the hand-over.
  const server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (local) => {
    const relay = o.tls ? o.tlsRelay : o.relay;
    const remote: Socket =
      o.tls && !relay
        ? tlsConnect(halfOpen({ host: o.host, port: o.port, ...clientTlsOptions(o.tls()) }))
        : createConnection({ host: o.host, port: o.port, allowHalfOpen: true });
    remote.once('error', (e) => log(`migration proxy ${o.unixPath} -> ${target}: ${e.message}`));
    if (relay) {
      const tls = o.tls && {
        material: o.tls(),
        peerCommonName: HANDLER_NODE_CN,
        refusal: serverCertificateRefusal,
      };
      relayOnConnect(local, remote, { relay, tls, counts: bytes, open, log });
      return;
    }
    remote.once(o.tls ? 'secureConnect' : 'connect', () => local.resume());
    pipeBoth(local, remote, bytes, open);
  });
  rmSync(o.unixPath, { force: true });
  mkdirSync(dirname(o.unixPath), { recursive: true });
  await listening(server, (cb) => server.listen(o.unixPath, cb));
  // QEMU and libvirt in the pod run as the launcher's user (107 in upstream's image).
  if (o.owner) chownSync(o.unixPath, o.owner.uid, o.owner.gid);
  chmodSync(o.unixPath, 0o660);
  return {
    unixPath: o.unixPath,
    target,
    bytes,
    stop: stopper(server, open, () => rmSync(o.unixPath, { force: true })),
  };
}

/** Options of {@link startTargetProxy}. */
export interface TargetProxyOptions {
  /** Address to listen on (the node's address; upstream binds the zero address). */
  host: string;
  /** 0: a free port. */
  port: number;
  /** The target launcher's unix socket each connection goes to. */
  unixTarget: string;
  /** Server material; undefined when TLS is disabled. */
  tls?: () => MigrationTlsMaterial;
  /** The kernel-copy relay for plain connections (relay.ts); undefined: Node copies. */
  relay?: string;
  /** The OpenSSL relay for TLS connections (relay.ts); undefined: Node's TLS. */
  tlsRelay?: string;
  log?: Log;
}

/** A TCP listener on the target node whose connections go to a unix socket in the target pod. */
export async function startTargetProxy(o: TargetProxyOptions): Promise<MigrationProxy> {
  const log = o.log ?? (() => {});
  const open: Open = new Set();
  const bytes = { out: 0, in: 0 };
  const forward = (remote: Socket) => {
    remote.pause();
    const local = createConnection({ path: o.unixTarget, allowHalfOpen: true });
    local.once('error', (e) => log(`migration proxy -> ${o.unixTarget}: ${e.message}`));
    const relay = o.tls ? undefined : o.relay;
    if (relay) {
      relayOnConnect(remote, local, { relay, counts: bytes, open, log });
      return;
    }
    local.once('connect', () => remote.resume());
    pipeBoth(remote, local, bytes, open);
  };
  let server: Server;
  if (o.tls && o.tlsRelay) {
    // Read when the listener starts (one per migration): rotated certificates apply to the next.
    const tls = {
      material: o.tls(),
      peerCommonName: VIRT_API_CLIENT_CN,
      refusal: clientIdentityRefusal,
      unixTarget: o.unixTarget,
    };
    const relay = o.tlsRelay;
    server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (remote) =>
      relayConnection([remote], { relay, tls, counts: bytes, open, log }),
    );
  } else if (o.tls) {
    const tls = o.tls;
    // Read when the listener starts (one per migration): rotated certificates apply to the next.
    // Not half-open, unlike the other sockets here: a half-open TLS server did not report a
    // client's refused certificate (tlsClientError) in migration-proxy.test.ts. The tail that
    // matters flows towards this side, which the source's half-open socket delivers whole.
    const tlsServer = createTlsServer(serverTlsOptions(tls()));
    tlsServer.on('secureConnection', (s: TLSSocket) => {
      const refusal = clientIdentityRefusal(s.getPeerX509Certificate());
      if (refusal) {
        log(`migration proxy on port ${port()}: refused ${s.remoteAddress}: ${refusal}`);
        s.destroy();
        return;
      }
      forward(s);
    });
    tlsServer.on('tlsClientError', (e, s) => {
      log(`migration proxy on port ${port()}: TLS handshake with ${s.remoteAddress}: ${e.message}`);
      s.destroy();
    });
    server = tlsServer;
  } else {
    server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, forward);
  }
  const port = () => {
    const a = server.address();
    return typeof a === 'object' && a ? a.port : o.port;
  };
  await listening(server, (cb) => server.listen(o.port, o.host, cb));
  return { port: port(), target: o.unixTarget, bytes, stop: stopper(server, open) };
}
