/**
 * The kernel-copy relay of plain (disableTLS) migration connections
 * (images/kubevirt-ts/migration-relay.c, driven by migration-proxy/relay.ts): built here
 * with gcc as the image build does, then run behind real source and target proxies over
 * loopback. Every byte arrives, in order, both ways; a peer that speaks first (QEMU's NBD
 * server) loses nothing to the hand-over; the end of a stream reaches the other side with
 * its whole tail even while the other direction is backed up; stop() ends relays
 * mid-connection; the byte counters add up the relays' reports.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultMigrationRelay,
  type MigrationProxy,
  startSourceProxy,
  startTargetProxy,
} from '../../../src/controllers/virt-handler/migration-proxy';
import { backedUpLauncher, sendAndEnd } from '../../support/backed-up-launcher';
import { buildRelay } from '../../support/migration-relays';

const dir = mkdtempSync(join(tmpdir(), 'kvts-relay-'));
// Why a skip, when there is one: the relay is C, built by gcc here as in the image build.
const { path: relay, skipReason } = buildRelay('migration-relay', dir);
const built = relay !== undefined;

/** A stand-in for a target launcher socket: echoes raw bytes, after `greeting` if any. */
async function launcher(path: string, greeting?: Buffer): Promise<{ server: Server; ended: Promise<void> }> {
  let end!: () => void;
  const ended = new Promise<void>((r) => {
    end = r;
  });
  const server = createServer((s) => {
    if (greeting) s.write(greeting);
    s.on('data', (d) => s.write(d));
    s.on('end', () => end());
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(path, r));
  return { server, ended };
}

/** Source and target proxies in a line, plain, with the relay. */
async function pair(name: string, unixTarget: string): Promise<{ src: MigrationProxy; dst: MigrationProxy }> {
  const dst = await startTargetProxy({ host: '127.0.0.1', port: 0, unixTarget, relay });
  const src = await startSourceProxy({
    unixPath: join(dir, `${name}-source.sock`),
    host: '127.0.0.1',
    port: dst.port ?? 0,
    relay,
  });
  return { src, dst };
}

/** Connects to `path`, writes `payload`, collects until `want` bytes came back. */
function roundTrip(path: string, payload: Buffer, want: number): Promise<{ got: Buffer; sock: Socket }> {
  return new Promise((resolve, reject) => {
    const sock = createConnection(path);
    const parts: Buffer[] = [];
    let n = 0;
    sock.on('data', (d: Buffer) => {
      parts.push(d);
      n += d.length;
      if (n >= want) resolve({ got: Buffer.concat(parts), sock });
    });
    sock.on('error', reject);
    sock.on('close', () => reject(new Error(`closed after ${n} of ${want} bytes`)));
    sock.write(payload);
  });
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!built)(`migration relay${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  let stops: Array<() => Promise<void> | void> = [];
  beforeAll(() => {
    stops = [];
  });
  afterAll(async () => {
    for (const s of stops) await s();
  });

  it('carries 16 MiB both ways through source and target proxies, every byte in order, and counts them', async () => {
    const l = await launcher(join(dir, 'echo.sock'));
    const { src, dst } = await pair('echo', join(dir, 'echo.sock'));
    stops.push(src.stop, dst.stop, () => void l.server.close());
    const payload = randomBytes(16 << 20);
    const { got, sock } = await roundTrip(src.unixPath ?? '', payload, payload.length);
    expect(got.equals(payload)).toBe(true);
    sock.destroy();
    await until(
      () => src.bytes.in === payload.length && dst.bytes.in === payload.length,
      'the relays’ counts',
    );
    expect(src.bytes).toEqual({ out: payload.length, in: payload.length });
    expect(dst.bytes).toEqual({ out: payload.length, in: payload.length });
  });

  it('loses nothing of a launcher socket that speaks first (as QEMU’s NBD server does)', async () => {
    const greeting = Buffer.from('NBDMAGIC-IHAVEOPT');
    const l = await launcher(join(dir, 'nbd.sock'), greeting);
    const { src, dst } = await pair('nbd', join(dir, 'nbd.sock'));
    stops.push(src.stop, dst.stop, () => void l.server.close());
    const { got, sock } = await roundTrip(src.unixPath ?? '', Buffer.from('opt'), greeting.length + 3);
    expect(got.toString()).toBe('NBDMAGIC-IHAVEOPTopt');
    sock.destroy();
  });

  it('sends the stream as it is on the wire (plain: no TLS record)', async () => {
    let got = '';
    const sniffer = createServer((s) => s.on('data', (d) => (got += d.toString())));
    await new Promise<void>((r) => sniffer.listen(0, '127.0.0.1', r));
    const src = await startSourceProxy({
      unixPath: join(dir, 'sniff-source.sock'),
      host: '127.0.0.1',
      port: (sniffer.address() as { port: number }).port,
      relay,
    });
    stops.push(src.stop, () => void sniffer.close());
    const s = createConnection(src.unixPath ?? '');
    s.write('QEVM guest memory');
    await until(() => got.length >= 17, 'the bytes on the wire');
    expect(got).toBe('QEVM guest memory');
    s.destroy();
  });

  it('passes the end of a stream on with its whole tail, while the other direction is backed up', async () => {
    // Closing the source relay's TCP socket at the client's end lost 3.9 of the 8 MiB here.
    const path = join(dir, 'tail.sock');
    const l = await backedUpLauncher(path);
    const { src, dst } = await pair('tail', path);
    stops.push(src.stop, dst.stop, () => void l.server.close());
    const sent = sendAndEnd(src.unixPath ?? '', 8 << 20);
    expect(await l.received).toBe(sent);
  });

  it('stop() ends a connection in flight, with its counts final', async () => {
    const l = await launcher(join(dir, 'stop.sock'));
    const { src, dst } = await pair('stop', join(dir, 'stop.sock'));
    stops.push(() => void l.server.close());
    const { sock } = await roundTrip(src.unixPath ?? '', Buffer.from('x'), 1);
    const closed = new Promise<void>((r) => sock.on('close', () => r()));
    sock.on('error', () => {});
    await src.stop();
    await dst.stop();
    await closed;
    // The relays' last counts (their SIGTERM report) are in when stop() resolves.
    expect(src.bytes).toEqual({ out: 1, in: 1 });
    expect(dst.bytes).toEqual({ out: 1, in: 1 });
  });
});

describe('defaultMigrationRelay', () => {
  it('takes KUBEVIRT_TS_MIGRATION_RELAY when it names an executable; empty or not executable: Node copies', () => {
    const plainFile = join(dir, 'not-executable');
    writeFileSync(plainFile, '');
    expect(defaultMigrationRelay({ KUBEVIRT_TS_MIGRATION_RELAY: '' })).toBeUndefined();
    expect(defaultMigrationRelay({ KUBEVIRT_TS_MIGRATION_RELAY: plainFile })).toBeUndefined();
    expect(defaultMigrationRelay({ KUBEVIRT_TS_MIGRATION_RELAY: join(dir, 'absent') })).toBeUndefined();
    if (built) expect(defaultMigrationRelay({ KUBEVIRT_TS_MIGRATION_RELAY: relay })).toBe(relay);
  });
});
