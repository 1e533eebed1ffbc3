/**
 * The RPC client against a hostile daemon on a unix socket: replies dribbled a byte at a
 * time, calls never answered, replies that do not match their call, floods of stream data.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LibvirtConnectionError, LibvirtError, LibvirtProtocolError } from '../../../src/drivers/libvirt';
import { DomainConsole } from '../../../src/drivers/libvirt/console';
import { VIR_ERR_OPERATION_TIMEOUT } from '../../../src/drivers/libvirt/errors';
import { EventStream } from '../../../src/drivers/libvirt/events';
import { PONG_FRAME } from '../../../src/drivers/libvirt/keepalive';
import {
  KEEPALIVE_PROGRAM,
  MessageStatus,
  MessageType,
} from '../../../src/drivers/libvirt/protocol/constants';
import {
  decodeMessage,
  encodeMessage,
  FrameDecoder,
  type Message,
} from '../../../src/drivers/libvirt/protocol/packet';
import { RpcTransport } from '../../../src/drivers/libvirt/transport';

const dir = mkdtempSync(path.join(os.tmpdir(), 'kvts-libvirt-hostile-'));
const timers: NodeJS.Timeout[] = [];
afterAll(() => {
  for (const t of timers) clearInterval(t);
  rmSync(dir, { recursive: true, force: true });
});

const PROG = 0x20008086;

/** A daemon that answers keepalive PINGs and hands every call to `onCall`. */
async function daemon(name: string, onCall: (sock: net.Socket, call: Message) => void) {
  const p = path.join(dir, name);
  const server = net.createServer((sock) => {
    const d = new FrameDecoder();
    sock.on('error', () => {});
    sock.on('data', (c) => {
      for (const f of d.push(c)) {
        const m = decodeMessage(f);
        if (m.header.program === KEEPALIVE_PROGRAM) sock.write(PONG_FRAME);
        else onCall(sock, m);
      }
    });
  });
  await new Promise<void>((r) => server.listen(p, r));
  return { path: p, close: () => server.close() };
}

function reply(call: Message, over: Partial<Message['header']> = {}): Buffer {
  return encodeMessage({ ...call.header, type: MessageType.REPLY, status: MessageStatus.OK, ...over });
}

describe('libvirt client against a hostile daemon', () => {
  it('declares a daemon dead that dribbles a reply one byte at a time (only whole messages count as alive)', async () => {
    const srv = await daemon('dribble.sock', (sock) => {
      // A frame announcing 1000 bytes, then one byte every 10 ms: never a whole message.
      sock.write(Buffer.from([0, 0, 3, 232]));
      const t = setInterval(() => sock.writable && sock.write(Buffer.from([0])), 10);
      timers.push(t);
    });
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: { intervalMs: 30, count: 3 } });
    const err = (await t.call(PROG, 1, 4).catch((e) => e)) as LibvirtError;
    expect(err).toBeInstanceOf(LibvirtConnectionError);
    expect((err as LibvirtConnectionError).reason).toBe('keepalive-timeout');
    srv.close();
  });

  it('bounds a call that a live daemon never answers, and keeps the connection usable', async () => {
    const srv = await daemon('mute.sock', (sock, call) => {
      if (call.header.procedure === 2) sock.write(reply(call));
    });
    const t = await RpcTransport.connect({
      socketPath: srv.path,
      keepalive: { intervalMs: 20, count: 3 },
      callTimeoutMs: 150,
    });
    const err = (await t
      .call(PROG, 1, 4, undefined, undefined, undefined, 'CONNECT_GET_TYPE')
      .catch((e) => e)) as LibvirtError;
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.code).toBe(VIR_ERR_OPERATION_TIMEOUT);
    expect(err.message).toMatch(/CONNECT_GET_TYPE: no reply .* within 150 ms/);
    expect(t.isOpen).toBe(true);
    expect(t.inFlight).toBe(0);
    await expect(t.call(PROG, 1, 2)).resolves.toBeUndefined();
    t.close();
    srv.close();
  });

  it('refuses replies whose program, version or procedure differ from the call, or whose status is CONTINUE', async () => {
    const cases: [string, Partial<Message['header']>][] = [
      ['procedure', { procedure: 99 }],
      ['program', { program: 0x20008087 }],
      ['version', { version: 7 }],
      ['status', { status: MessageStatus.CONTINUE }],
    ];
    for (const [what, over] of cases) {
      const srv = await daemon(`mismatch-${what}-${JSON.stringify(over).length}.sock`, (sock, call) =>
        sock.write(reply(call, over)),
      );
      const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
      const err = (await t.call(PROG, 1, 4).catch((e) => e)) as LibvirtError;
      expect([what, err instanceof LibvirtProtocolError]).toEqual([what, true]);
      expect(err.message).toMatch(
        what === 'status' ? /unexpected reply status/ : /unexpected reply \(program/,
      );
      t.close();
      srv.close();
    }
  });

  it('drops the connection on a reply with a status outside the protocol', async () => {
    const srv = await daemon('status9.sock', (sock, call) => sock.write(reply(call, { status: 9 })));
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
    const err = (await t.call(PROG, 1, 4).catch((e) => e)) as LibvirtError;
    expect(err).toBeInstanceOf(LibvirtConnectionError);
    expect(t.isOpen).toBe(false);
    srv.close();
  });
});

describe('queues bounded in bytes', () => {
  it('an event stream keeps at most maxBufferedBytes of unread events', async () => {
    const s = new EventStream<number>(() => {}, 10_000, 4 * 1024 * 1024);
    for (let i = 0; i < 100; i++) s.push(i, 1024 * 1024);
    expect(s.bufferedBytes).toBe(4 * 1024 * 1024);
    expect(s.dropped).toBe(96);
    expect((await s.next()).value).toBe(96);
    expect(s.bufferedBytes).toBe(3 * 1024 * 1024);
  });

  it('a console that is not read keeps at most 4 MiB of guest output', async () => {
    const stub = { sendStream: () => {}, dropStream: () => {} } as unknown as RpcTransport;
    const c = new DomainConsole(stub);
    const chunk = Buffer.alloc(262_120, 0x41);
    for (let i = 0; i < 100; i++) c.handler.onData(chunk); // 25 MiB of output nobody reads
    let bytes = 0;
    c.handler.onEnd();
    for await (const b of c) bytes += b.length;
    expect(bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(bytes).toBeGreaterThan(3 * 1024 * 1024);
  });
});
