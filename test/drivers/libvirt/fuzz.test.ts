/**
 * Fuzzing the decoder: valid frames of every shape the client reads are truncated, bit-
 * flipped, spliced and filled with random bytes, then run through the whole receive path
 * (frame splitter, header, payload decoder). Every outcome must be a value or a typed
 * `LibvirtError`, never another exception, a crash or a hang. A fake daemon then sends such
 * frames to a real transport: the pending call must reject with a typed error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LibvirtError } from '../../../src/drivers/libvirt';
import {
  MessageStatus,
  MessageType,
  REMOTE_PROGRAM,
  RemoteProc,
} from '../../../src/drivers/libvirt/protocol/constants';
import { decodeMessage, encodeMessage, FrameDecoder } from '../../../src/drivers/libvirt/protocol/packet';
import {
  readAgentLifecycleEvent,
  readDeviceRemovedEvent,
  readDomainInfo,
  readDomainList,
  readDomainStats,
  readJobInfo,
  readLifecycleEvent,
  readMemoryStats,
  readNodeInfo,
} from '../../../src/drivers/libvirt/protocol/remote';
import {
  decodeError,
  encodeError,
  readDomain,
  readString,
  readTypedParams,
  tp,
  writeDomain,
  writeString,
  writeTypedParams,
} from '../../../src/drivers/libvirt/protocol/types';
import { RpcTransport } from '../../../src/drivers/libvirt/transport';
import { XdrReader, type XdrWriter } from '../../../src/drivers/libvirt/xdr';

/** Deterministic PRNG (mulberry32) so a failure reproduces. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const dom = { name: 'kvts-fuzz', uuid: '6695eb01-f6a4-8304-79aa-97f2502e193f', id: 3 };

interface Sample {
  name: string;
  status: number;
  body: (w: XdrWriter) => void;
  read: (r: XdrReader) => unknown;
}

const samples: Sample[] = [
  { name: 'domain', status: 0, body: (w) => writeDomain(w, dom), read: readDomain },
  { name: 'string', status: 0, body: (w) => writeString(w, '<capabilities/>'), read: readString },
  {
    name: 'typed params',
    status: 0,
    body: (w) =>
      writeTypedParams(
        w,
        [
          tp.int('a', -1),
          tp.ullong('b', 2n ** 40n),
          tp.string('c', 'x'),
          tp.boolean('d', true),
          tp.double('e', 0.5),
        ],
        64,
      ),
    read: (r) => readTypedParams(r, 64),
  },
  {
    name: 'node info',
    status: 0,
    body: (w) => {
      for (let i = 0; i < 32; i++) w.int(i < 4 ? 65 + i : 0);
      w.uhyper(1024n).int(1).int(2).int(3).int(4).int(5).int(6);
    },
    read: readNodeInfo,
  },
  {
    name: 'domain info',
    status: 0,
    body: (w) => w.int(1).uhyper(10n).uhyper(5n).int(2).uhyper(99n),
    read: readDomainInfo,
  },
  {
    name: 'job info',
    status: 0,
    body: (w) => {
      w.int(1);
      for (let i = 0; i < 11; i++) w.uhyper(BigInt(i));
    },
    read: readJobInfo,
  },
  {
    name: 'domain list',
    status: 0,
    body: (w) => {
      w.uint(2);
      writeDomain(w, dom);
      writeDomain(w, dom);
      w.uint(2);
    },
    read: readDomainList,
  },
  {
    name: 'domain stats',
    status: 0,
    body: (w) => {
      w.uint(1);
      writeDomain(w, dom);
      writeTypedParams(w, [tp.int('state.state', 1), tp.string('balloon.x', 'y')], 1000);
    },
    read: readDomainStats,
  },
  {
    name: 'memory stats',
    status: 0,
    body: (w) => {
      w.uint(2).int(6).uhyper(1n).int(7).uhyper(2n);
    },
    read: readMemoryStats,
  },
  {
    name: 'lifecycle event',
    status: 0,
    body: (w) => {
      w.int(1);
      writeDomain(w, dom);
      w.int(2).int(0);
    },
    read: readLifecycleEvent,
  },
  {
    name: 'device removed',
    status: 0,
    body: (w) => {
      w.int(1);
      writeDomain(w, dom);
      writeString(w, 'ua-disk1');
    },
    read: readDeviceRemovedEvent,
  },
  {
    name: 'agent lifecycle',
    status: 0,
    body: (w) => {
      w.int(1);
      writeDomain(w, dom);
      w.int(1).int(2);
    },
    read: readAgentLifecycleEvent,
  },
  {
    name: 'error',
    status: MessageStatus.ERROR,
    body: (w) => encodeError(w, { code: 42, domain: 10, message: 'Domain not found', level: 2 }),
    read: decodeError,
  },
];

function frameOf(s: Sample, serial: number): Buffer {
  return encodeMessage(
    {
      program: REMOTE_PROGRAM,
      version: 1,
      procedure: RemoteProc.DOMAIN_LOOKUP_BY_NAME,
      type: MessageType.REPLY,
      serial,
      status: s.status,
    },
    s.body,
  );
}

/** The client's receive path for one byte stream; returns decoded values. */
function receive(bytes: Buffer, read: (r: XdrReader) => unknown): unknown[] {
  const out: unknown[] = [];
  for (const f of new FrameDecoder().push(bytes)) {
    const m = decodeMessage(f);
    const r = new XdrReader(m.payload);
    out.push(read(r));
    r.done();
  }
  return out;
}

function mutate(buf: Buffer, rnd: () => number): Buffer {
  const b = Buffer.from(buf);
  switch (Math.floor(rnd() * 6)) {
    case 0: // truncate
      return b.subarray(0, Math.floor(rnd() * b.length));
    case 1: // flip bits
      for (let i = 0, n = 1 + Math.floor(rnd() * 4); i < n; i++)
        b[Math.floor(rnd() * b.length)] ^= 1 << Math.floor(rnd() * 8);
      return b;
    case 2: // overwrite a word with an extreme value, keeping the length word coherent sometimes
      if (b.length >= 8)
        b.writeUInt32BE(
          [0, 0xffffffff, 0x7fffffff, 0x80000000, 1][Math.floor(rnd() * 5)],
          4 * Math.floor(rnd() * Math.floor(b.length / 4)),
        );
      return b;
    case 3: // random bytes in the payload, length word fixed
      for (let i = 28; i < b.length; i++) if (rnd() < 0.3) b[i] = Math.floor(rnd() * 256);
      return b;
    case 4: // shrink the length word (frame ends early, rest is garbage for the next frame)
      if (b.length < 4) return b;
      b.writeUInt32BE(Math.max(0, b.readUInt32BE(0) - 4 * (1 + Math.floor(rnd() * 4))), 0);
      return b;
    default: // append junk
      return Buffer.concat([
        b,
        Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 40) }, () => Math.floor(rnd() * 256))),
      ]);
  }
}

describe('decoder fuzz', () => {
  it('decodes every unmutated sample (the fuzz inputs start valid)', () => {
    for (const s of samples) expect(receive(frameOf(s, 1), s.read)).toHaveLength(1);
  });

  it('turns 20,000 truncated and corrupted frames into values or typed LibvirtErrors only', () => {
    const rnd = prng(0x1ee7);
    let typed = 0;
    let decoded = 0;
    for (let i = 0; i < 20_000; i++) {
      const s = samples[i % samples.length];
      let bytes = frameOf(s, i);
      for (let k = 0, n = 1 + Math.floor(rnd() * 3); k < n; k++) bytes = mutate(bytes, rnd);
      try {
        receive(bytes, s.read);
        decoded++;
      } catch (e) {
        if (!(e instanceof LibvirtError))
          throw new Error(`sample ${s.name} #${i} (${bytes.toString('hex')}) threw ${String(e)}`);
        typed++;
      }
    }
    // Both outcomes occur: mutations that hit padding or data decode; the rest are typed.
    expect(typed).toBeGreaterThan(10_000);
    expect(decoded).toBeGreaterThan(0);
  });

  it('rejects pure random byte streams with typed errors', () => {
    const rnd = prng(42);
    for (let i = 0; i < 5000; i++) {
      const bytes = Buffer.from(
        Array.from({ length: Math.floor(rnd() * 200) }, () => Math.floor(rnd() * 256)),
      );
      try {
        receive(bytes, readDomain);
      } catch (e) {
        expect(e).toBeInstanceOf(LibvirtError);
      }
    }
  });
});

describe('transport fed corrupted frames by a fake daemon', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kvts-libvirt-fuzz-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function serve(
    name: string,
    answer: (call: Buffer, sock: net.Socket) => void,
  ): Promise<{ path: string; close: () => void }> {
    const p = path.join(dir, name);
    const server = net.createServer((sock) => {
      const d = new FrameDecoder();
      sock.on('data', (chunk) => {
        for (const f of d.push(chunk)) answer(f, sock);
      });
      sock.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(p, r));
    return { path: p, close: () => server.close() };
  }

  it('fails the pending call with a typed error when the reply frame has an impossible length', async () => {
    const srv = await serve('badlen.sock', (_f, sock) => sock.write(Buffer.from('ffffffff00000000', 'hex')));
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
    const err = await t.call(REMOTE_PROGRAM, 1, 4, undefined, (r) => r.uhyper()).catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.message).toMatch(/outside libvirt's limits/);
    expect(t.isOpen).toBe(false);
    srv.close();
  });

  it('fails the call with a typed error when the reply payload is truncated', async () => {
    const srv = await serve('trunc.sock', (f, sock) => {
      const serial = decodeMessage(f).header.serial;
      // A valid frame whose payload holds half of the unsigned hyper the call expects.
      sock.write(
        encodeMessage(
          { program: REMOTE_PROGRAM, version: 1, procedure: 4, type: MessageType.REPLY, serial, status: 0 },
          (w) => w.uint(7),
        ),
      );
    });
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
    const err = await t.call(REMOTE_PROGRAM, 1, 4, undefined, (r) => r.uhyper()).catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.message).toMatch(/truncated unsigned hyper/);
    // A bad payload spoils only that call: the connection stays usable.
    expect(t.isOpen).toBe(true);
    t.close();
    srv.close();
  });

  it('fails every pending call when the daemon sends garbage and hangs up mid-frame', async () => {
    const srv = await serve('garbage.sock', (_f, sock) => {
      sock.write(Buffer.from('0000004020008086', 'hex'));
      sock.end();
    });
    const t = await RpcTransport.connect({ socketPath: srv.path, keepalive: false });
    const calls = [1, 2, 3].map(() => t.call(REMOTE_PROGRAM, 1, 4).catch((e) => e));
    const errs = await Promise.all(calls);
    for (const e of errs) expect(e).toBeInstanceOf(LibvirtError);
    srv.close();
  });
});
