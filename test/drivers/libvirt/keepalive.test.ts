/**
 * Keepalive: the client probes a silent peer with PINGs and declares it dead after `count`
 * intervals; it answers the daemon's PINGs with PONGs; against the real daemon an idle
 * connection with fast probing stays open because libvirtd answers them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LibvirtClient, LibvirtConnectionError } from '../../../src/drivers/libvirt';
import { KeepAlive, PING_FRAME } from '../../../src/drivers/libvirt/keepalive';
import { KEEPALIVE_PROC_PONG, KEEPALIVE_PROGRAM } from '../../../src/drivers/libvirt/protocol/constants';
import { decodeMessage, FrameDecoder, type Message } from '../../../src/drivers/libvirt/protocol/packet';
import { RpcTransport } from '../../../src/drivers/libvirt/transport';
import { integration } from '../../support/integration';
import { systemDaemonReachable } from './support';

const dir = mkdtempSync(path.join(os.tmpdir(), 'kvts-libvirt-ka-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fake daemon recording every message it receives; `onConnect` may write to the client. */
async function fakeDaemon(name: string, onConnect?: (s: net.Socket) => void) {
  const received: Message[] = [];
  const waiters: Array<() => void> = [];
  const p = path.join(dir, name);
  const server = net.createServer((sock) => {
    const d = new FrameDecoder();
    sock.on('data', (c) => {
      for (const f of d.push(c)) received.push(decodeMessage(f));
      for (const w of waiters.splice(0)) w();
    });
    sock.on('error', () => {});
    onConnect?.(sock);
  });
  await new Promise<void>((r) => server.listen(p, r));
  const until = async (pred: () => boolean) => {
    while (!pred()) await new Promise<void>((r) => waiters.push(r));
  };
  return { path: p, received, until, close: () => server.close() };
}

describe('keepalive', () => {
  it('rejects bad settings', () => {
    expect(
      () =>
        new KeepAlive(
          { intervalMs: 0, count: 1 },
          () => {},
          () => {},
        ),
    ).toThrow(/intervalMs/);
    expect(
      () =>
        new KeepAlive(
          { intervalMs: 10, count: 0 },
          () => {},
          () => {},
        ),
    ).toThrow(/count/);
  });

  it('pings a silent daemon, then fails pending calls with keepalive-timeout', async () => {
    const srv = await fakeDaemon('silent.sock');
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: { intervalMs: 40, count: 3 } });
    const err = (await t.call(0x20008086, 1, 4).catch((e) => e)) as LibvirtConnectionError;
    expect(err).toBeInstanceOf(LibvirtConnectionError);
    expect(err.reason).toBe('keepalive-timeout');
    // The probes were sent before the peer was declared dead (they may still be in flight).
    const isPing = (m: Message) => m.header.program === KEEPALIVE_PROGRAM && m.header.procedure === 1;
    await srv.until(() => srv.received.filter(isPing).length >= 3);
    expect(srv.received.filter(isPing)).toHaveLength(3);
    srv.close();
  });

  it('answers a PING from the daemon with a PONG', async () => {
    const srv = await fakeDaemon('pinger.sock', (s) => s.write(PING_FRAME));
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
    await srv.until(() => srv.received.some((m) => m.header.program === KEEPALIVE_PROGRAM));
    const pong = srv.received.find((m) => m.header.program === KEEPALIVE_PROGRAM);
    expect(pong?.header.procedure).toBe(KEEPALIVE_PROC_PONG);
    expect(pong?.header.type).toBe(2);
    expect(pong?.payload.length).toBe(0);
    t.close();
    srv.close();
  });
});

const available = await systemDaemonReachable();
const run = integration(
  'libvirtd (keepalive)',
  available,
  'libvirtd socket /var/run/libvirt/libvirt-sock not reachable',
);

describe.skipIf(!run)('keepalive with the real daemon', () => {
  it('keeps an idle connection open because libvirtd answers PINGs', async () => {
    const c = await LibvirtClient.connect({
      uri: 'test:///default',
      // Dead after 1 s of silence; the idle period below is 2.5 s, so the connection
      // survives only if libvirtd answers the PINGs (loose enough for a loaded daemon).
      keepalive: { intervalMs: 100, count: 10 },
    });
    try {
      await new Promise((r) => setTimeout(r, 2500));
      expect(c.connectionState).toBe('open');
      expect(await c.getType()).toBe('TEST');
    } finally {
      await c.close();
    }
  });
});
