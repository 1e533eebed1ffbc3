/**
 * The kernel copy for plain (disableTLS) migration connections: the two sockets of a
 * connection are handed to `migration-relay` (images/kubevirt-ts/migration-relay.c), which
 * moves the bytes with splice(2) as Go's io.Copy does in upstream's proxy, instead of
 * Node reading each chunk into a new Buffer and writing it out again. TLS connections stay
 * in Node: their bytes must pass through userspace to be encrypted.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import type { Socket } from 'node:net';

/** Where the kubevirt-ts image installs the relay. */
export const MIGRATION_RELAY_IMAGE_PATH = '/usr/bin/kubevirt-ts-migration-relay';

/**
 * The relay the `virt-handler` command's migration proxy uses: `KUBEVIRT_TS_MIGRATION_RELAY`
 * when set (empty: none), else the image's when it is there. Undefined: Node copies plain
 * connections too (a handler run outside the kubevirt-ts image, without the variable).
 */
export function defaultMigrationRelay(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const path = env.KUBEVIRT_TS_MIGRATION_RELAY ?? MIGRATION_RELAY_IMAGE_PATH;
  if (!path) return undefined;
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/** What {@link relayConnection} needs besides the two sockets. */
export interface RelayContext {
  /** The relay executable. */
  relay: string;
  /** Bytes carried each way by the proxy (out: first socket to second); updated as relays report. */
  counts: { out: number; in: number };
  /** The open connections of the proxy, ended by its stop() (which awaits `exited`). */
  open: Set<{ destroy(): void; exited?: Promise<void> }>;
  log: (message: string) => void;
}

/**
 * Hands connected sockets `a` and `b` to a relay process and closes this process's copies.
 * Neither may have been read from (paused before they connected or were accepted), or
 * bytes already buffered here would be lost to the relay.
 */
export function relayConnection(a: Socket, b: Socket, ctx: RelayContext): void {
  a.setNoDelay(true);
  b.setNoDelay(true);
  const child = spawn(ctx.relay, [], { stdio: ['ignore', 'pipe', 'pipe', a, b] });
  // The child holds its own duplicates of both descriptors from here on.
  a.destroy();
  b.destroy();
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
  // The relay reports its own totals; the proxy's counts add up all its connections.
  const seen = { out: 0, in: 0 };
  let tail = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    tail += chunk;
    const lines = tail.split('\n');
    tail = lines.pop() ?? '';
    // The last whole report; a line cut by the relay's SIGTERM report has one field.
    for (const line of lines.reverse()) {
      const f = line.split(' ').map(Number);
      if (f.length !== 2 || !f.every(Number.isFinite)) continue;
      ctx.counts.out += f[0] - seen.out;
      ctx.counts.in += f[1] - seen.in;
      seen.out = f[0];
      seen.in = f[1];
      return;
    }
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
    relayConnection(accepted, dialled, ctx);
  });
}
