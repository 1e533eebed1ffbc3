/**
 * Console stream framing against a fake daemon: output packets reach the iterator, input is
 * sent as unpadded STREAM packets on the opening call's serial, close sends status OK, and
 * a daemon-side stream error ends iteration with a typed error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DomainConsole, LibvirtError } from '../../../src/drivers/libvirt';
import {
  MessageStatus,
  MessageType,
  REMOTE_PROGRAM,
  RemoteProc,
} from '../../../src/drivers/libvirt/protocol/constants';
import {
  decodeMessage,
  encodeMessage,
  FrameDecoder,
  type Message,
} from '../../../src/drivers/libvirt/protocol/packet';
import { encodeError } from '../../../src/drivers/libvirt/protocol/types';
import { RpcTransport } from '../../../src/drivers/libvirt/transport';

const dir = mkdtempSync(path.join(os.tmpdir(), 'kvts-libvirt-console-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const P = RemoteProc.DOMAIN_OPEN_CONSOLE;

/** A fake daemon: answers the open call, then runs `script` on the socket. */
async function fake(name: string, script: (sock: net.Socket, serial: number) => void) {
  const got: Array<{ m: Message; raw: Buffer }> = [];
  const waiters: Array<() => void> = [];
  const p = path.join(dir, name);
  const server = net.createServer((sock) => {
    const d = new FrameDecoder();
    sock.on('error', () => {});
    sock.on('data', (c) => {
      for (const f of d.push(c)) {
        const m = decodeMessage(f);
        got.push({ m, raw: f });
        if (m.header.type === MessageType.CALL) {
          const h = { ...m.header, type: MessageType.REPLY, status: MessageStatus.OK };
          sock.write(encodeMessage(h));
          script(sock, m.header.serial);
        }
      }
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((r) => server.listen(p, r));
  const until = async (pred: () => boolean) => {
    while (!pred()) await new Promise<void>((r) => waiters.push(r));
  };
  return { path: p, got, until, close: () => server.close() };
}

function streamPacket(serial: number, status: number, body?: Buffer): Buffer {
  return encodeMessage(
    { program: REMOTE_PROGRAM, version: 1, procedure: P, type: MessageType.STREAM, serial, status },
    body ? (w) => w.raw(body) : undefined,
  );
}

async function open(t: RpcTransport): Promise<DomainConsole> {
  const con = new DomainConsole(t);
  await t.call(REMOTE_PROGRAM, 1, P, (w) => w.int(0), undefined, con.handler);
  return con;
}

describe('console stream', () => {
  it('delivers output, sends input unpadded on the call serial, and closes with status OK', async () => {
    const srv = await fake('con.sock', (sock, serial) => {
      sock.write(streamPacket(serial, MessageStatus.CONTINUE, Buffer.from('hello ')));
      sock.write(streamPacket(serial, MessageStatus.CONTINUE, Buffer.from('world')));
    });
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
    const con = await open(t);
    const first = await con.next();
    const second = await con.next();
    expect(Buffer.concat([first.value, second.value]).toString()).toBe('hello world');
    con.write('abc');
    await con.close();
    await srv.until(() => srv.got.filter((g) => g.m.header.type === MessageType.STREAM).length >= 2);
    const callSerial = srv.got[0].m.header.serial;
    const [input, fin] = srv.got.filter((g) => g.m.header.type === MessageType.STREAM);
    expect(input.m.header).toMatchObject({
      serial: callSerial,
      procedure: P,
      status: MessageStatus.CONTINUE,
    });
    expect(input.raw.length).toBe(28 + 3); // raw bytes, no XDR padding
    expect(input.m.payload.toString()).toBe('abc');
    expect(fin.m.header).toMatchObject({ serial: callSerial, status: MessageStatus.OK });
    expect(fin.m.payload.length).toBe(0);
    expect((await con.next()).done).toBe(true);
    t.close();
    srv.close();
  });

  it('ends iteration with the daemon error when the stream fails', async () => {
    const srv = await fake('err.sock', (sock, serial) => {
      sock.write(
        encodeMessage(
          {
            program: REMOTE_PROGRAM,
            version: 1,
            procedure: P,
            type: MessageType.STREAM,
            serial,
            status: MessageStatus.ERROR,
          },
          (w) =>
            encodeError(w, {
              code: 1,
              domain: 10,
              message: 'internal error: character device console0 is not using a PTY',
              level: 2,
            }),
        ),
      );
    });
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
    const con = await open(t);
    const err = await con.next().catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.code).toBe(1);
    expect(err.message).toContain('not using a PTY');
    expect(() => con.write('x')).toThrow(/closed/);
    t.close();
    srv.close();
  });
});
