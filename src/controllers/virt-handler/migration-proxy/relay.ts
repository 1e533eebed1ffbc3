/**
 * The relays that copy migration connections outside Node: plain (disableTLS) connections
 * go to `migration-relay` (images/kubevirt-ts/migration-relay.c), which moves the bytes with
 * splice(2) as Go's io.Copy does in upstream's proxy; TLS ones to `migration-tls-relay`
 * (migration-tls-relay.c), which does the mutual TLS with OpenSSL. Either way Node no longer
 * reads each chunk into a new Buffer (and encrypts it through its TLS streams) on a node
 * whose QEMU needs the CPU. The TLS relay verifies the peer's chain; the identity rules stay
 * here (tls.ts), applied to the certificate the relay reports before it carries a byte; the
 * relay checks the peer's common name during the handshake too (as upstream's
 * VerifyPeerCertificate does).
 */
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import type { Socket } from 'node:net';
import type { MigrationTlsMaterial } from './tls';

/** Where the kubevirt-ts image installs the plain relay. */
export const MIGRATION_RELAY_IMAGE_PATH = '/usr/bin/kubevirt-ts-migration-relay';
/** Where the kubevirt-ts image installs the TLS relay. */
export const MIGRATION_TLS_RELAY_IMAGE_PATH = '/usr/bin/kubevirt-ts-migration-tls-relay';

function executable(path: string): string | undefined {
  if (!path) return undefined;
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/**
 * The plain relay the `virt-handler` command's migration proxy uses:
 * `KUBEVIRT_TS_MIGRATION_RELAY` when set (empty: none), else the image's when it is there.
 * Undefined: Node copies plain connections too (a handler run outside the kubevirt-ts image,
 * without the variable).
 */
export function defaultMigrationRelay(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return executable(env.KUBEVIRT_TS_MIGRATION_RELAY ?? MIGRATION_RELAY_IMAGE_PATH);
}

/** The TLS relay, likewise: `KUBEVIRT_TS_MIGRATION_TLS_RELAY`, else the image's; undefined: Node's TLS. */
export function defaultMigrationTlsRelay(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return executable(env.KUBEVIRT_TS_MIGRATION_TLS_RELAY ?? MIGRATION_TLS_RELAY_IMAGE_PATH);
}

/** The TLS side of a relayed connection. */
export interface RelayTls {
  /** This side's certificate and key, and the CA the peer's chain must lead to. */
  material: MigrationTlsMaterial;
  /**
   * The common name the peer's certificate must carry, checked by the relay during the
   * handshake (a refused target never sees the source's Finished, so never dials its launcher).
   */
  peerCommonName: string;
  /** This side's whole identity rule, applied to the peer's certificate before a byte is carried. */
  refusal: (cert: X509Certificate) => string | undefined;
  /**
   * The server side: the launcher socket the relay dials once the peer is accepted (never
   * before: QEMU takes one incoming migration connection).
   */
  unixTarget?: string;
}

/** What {@link relayConnection} needs besides the two sockets. */
export interface RelayContext {
  /** The relay executable (the TLS one when {@link tls} is set). */
  relay: string;
  /** Set: the connection's network side speaks mutual TLS, done by the relay. */
  tls?: RelayTls;
  /** Bytes carried each way by the proxy (out: first socket to second); updated as relays report. */
  counts: { out: number; in: number };
  /** The open connections of the proxy, ended by its stop() (which awaits `exited`). */
  open: Set<{ destroy(): void; exited?: Promise<void> }>;
  log: (message: string) => void;
}

/** The relay's arguments and stdin for a TLS side: the mode, then the PEM material on stdin. */
function tlsArgs(tls: RelayTls): { args: string[]; material: Buffer } {
  const pems = [tls.material.cert, tls.material.key, tls.material.ca].map((p) => Buffer.from(p));
  const header = Buffer.from(`${pems.map((p) => p.length).join(' ')}\n`);
  return {
    args: tls.unixTarget ? ['server', tls.peerCommonName, tls.unixTarget] : ['client', tls.peerCommonName],
    material: Buffer.concat([header, ...pems]),
  };
}

/**
 * Hands connected sockets to a relay process and closes this process's copies: `a` and `b`
 * (the relay's descriptors 3 and 4), or for a TLS server side only the accepted `a`, the
 * relay dialling the launcher itself. None may have been read from (paused before they
 * connected or were accepted), or bytes already buffered here would be lost to the relay.
 */
export function relayConnection(sockets: [Socket] | [Socket, Socket], ctx: RelayContext): void {
  for (const s of sockets) s.setNoDelay(true);
  const peerAddress = sockets[ctx.tls?.unixTarget ? 0 : 1]?.remoteAddress ?? 'peer';
  const tls = ctx.tls && tlsArgs(ctx.tls);
  const child = spawn(ctx.relay, tls?.args ?? [], {
    stdio: [tls ? 'pipe' : 'ignore', 'pipe', 'pipe', ...sockets],
  });
  child.stdin?.on('error', () => {}); // a relay that died early: its exit is logged below
  child.stdin?.write(tls?.material ?? '');
  // The child holds its own duplicates of the descriptors from here on.
  for (const s of sockets) s.destroy();
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', () => resolve());
  });
  // stop(): SIGTERM makes the relay print its last counts; SIGKILL if it has not gone in 1 s.
  const entry = {
    destroy: () => {
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 1_000).unref();
    },
    exited,
  };
  ctx.open.add(entry);
  /** The TLS relay's peer, verified against this side's identity rule before a byte is carried. */
  const judge = (hex: string) => {
    let refusal: string | undefined;
    try {
      refusal = ctx.tls?.refusal(new X509Certificate(Buffer.from(hex, 'hex')));
    } catch (e) {
      refusal = `unreadable peer certificate: ${(e as Error).message}`;
    }
    if (refusal) {
      ctx.log(`migration relay: refused ${peerAddress}: ${refusal}`);
      entry.destroy();
      return;
    }
    child.stdin?.end('ok\n');
  };
  // The relay reports its own totals; the proxy's counts add up all its connections.
  const seen = { out: 0, in: 0 };
  let tail = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    tail += chunk;
    const lines = tail.split('\n');
    tail = lines.pop() ?? '';
    let last: number[] | undefined;
    for (const line of lines) {
      if (line.startsWith('peer ')) judge(line.slice(5));
      const f = line.split(' ').map(Number);
      // A line cut by the relay's SIGTERM report has one field.
      if (f.length === 2 && f.every(Number.isFinite)) last = f;
    }
    if (!last) return;
    ctx.counts.out += last[0] - seen.out;
    ctx.counts.in += last[1] - seen.in;
    seen.out = last[0];
    seen.in = last[1];
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  child.on('error', (e) => {
    ctx.open.delete(entry);
    ctx.log(`migration relay ${ctx.relay}: ${e.message}`);
  });
  child.on('close', (code, signal) => {
    ctx.open.delete(entry);
    if (code !== 0)
      ctx.log(`migration relay exited with ${code ?? signal}: ${stderr.trim() || 'no message'}`);
  });
}

/**
 * Relays `accepted` (a connection a proxy accepted, paused since) and `dialled` (the
 * connection it opened for it) once `dialled` connects; either ending first ends the
 * other. `dialled` is paused before it connects: a peer that speaks first (QEMU's NBD
 * server) must not be read by Node.
 */
export function relayOnConnect(accepted: Socket, dialled: Socket, ctx: RelayContext): void {
  dialled.pause();
  ctx.open.add(accepted);
  accepted.once('close', () => {
    ctx.open.delete(accepted);
    dialled.destroy();
  });
  dialled.once('error', () => accepted.destroy());
  dialled.once('connect', () => {
    ctx.open.delete(accepted);
    relayConnection([accepted, dialled], ctx);
  });
}
