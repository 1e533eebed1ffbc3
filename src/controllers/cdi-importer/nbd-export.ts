/**
 * A read-only NBD server on a unix socket, exporting a {@link RangeSource}: qemu-img reads
 * the http source through it (`nbd+unix:///?socket=...`, qemu's built-in NBD client) and
 * converts as the bytes arrive, as CDI's importer does through nbdkit. Only what qemu-img
 * needs of the protocol (https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md):
 * fixed newstyle negotiation, NBD_OPT_GO / INFO / EXPORT_NAME, simple replies, reads; every
 * other option is unsupported and every write-like command is refused (EPERM).
 */
import { rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import type { RangeSource } from './http-ranges';

const NBDMAGIC = 0x4e42444d41474943n;
const IHAVEOPT = 0x49484156454f5054n;
const REPLY_MAGIC = 0x3e889045565a9n;
const REQUEST_MAGIC = 0x25609513;
const SIMPLE_REPLY_MAGIC = 0x67446698;
const FLAG_FIXED_NEWSTYLE = 1;
const FLAG_NO_ZEROES = 2;
const OPT = { exportName: 1, abort: 2, info: 6, go: 7 } as const;
const REP = { ack: 1, info: 3, errUnsup: 0x80000001 } as const;
const TRANSMISSION_FLAGS = 1 | 2; // HAS_FLAGS | READ_ONLY
const CMD = { read: 0, write: 1, disc: 2 } as const;
const EPERM = 1;
const EIO = 5;
const EINVAL = 22;
/** Larger reads are refused (qemu asks for at most 32 MiB). */
const MAX_READ = 32 << 20;

/** Reads exact byte counts from a socket. */
class Reader {
  private chunks: Buffer[] = [];
  private have = 0;
  private wake?: () => void;
  private ended = false;

  constructor(socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.chunks.push(d);
      this.have += d.length;
      this.wake?.();
    });
    const end = () => {
      this.ended = true;
      this.wake?.();
    };
    socket.on('end', end);
    socket.on('close', end);
  }

  async read(n: number): Promise<Buffer> {
    while (this.have < n) {
      if (this.ended) throw new Error('the client went away');
      await new Promise<void>((r) => {
        this.wake = r;
      });
      this.wake = undefined;
    }
    const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
    this.chunks = all.length > n ? [all.subarray(n)] : [];
    this.have -= n;
    return all.subarray(0, n);
  }
}

function optionReply(option: number, type: number, data = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(20);
  b.writeBigUInt64BE(REPLY_MAGIC, 0);
  b.writeUInt32BE(option, 8);
  b.writeUInt32BE(type, 12);
  b.writeUInt32BE(data.length, 16);
  return Buffer.concat([b, data]);
}

function simpleReply(handle: Buffer, error: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt32BE(SIMPLE_REPLY_MAGIC, 0);
  b.writeUInt32BE(error, 4);
  handle.copy(b, 8);
  return b;
}

/** Negotiates the export; true when transmission starts. */
async function negotiate(socket: Socket, r: Reader, size: number): Promise<boolean> {
  const hello = Buffer.alloc(18);
  hello.writeBigUInt64BE(NBDMAGIC, 0);
  hello.writeBigUInt64BE(IHAVEOPT, 8);
  hello.writeUInt16BE(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES, 16);
  socket.write(hello);
  const clientFlags = (await r.read(4)).readUInt32BE(0);
  for (;;) {
    const h = await r.read(16);
    if (h.readBigUInt64BE(0) !== IHAVEOPT) return false;
    const option = h.readUInt32BE(8);
    const len = h.readUInt32BE(12);
    if (len > 65536) return false;
    if (len > 0) await r.read(len);
    if (option === OPT.exportName) {
      const b = Buffer.alloc(clientFlags & FLAG_NO_ZEROES ? 10 : 134);
      b.writeBigUInt64BE(BigInt(size), 0);
      b.writeUInt16BE(TRANSMISSION_FLAGS, 8);
      socket.write(b);
      return true;
    }
    if (option === OPT.go || option === OPT.info) {
      const info = Buffer.alloc(12);
      info.writeUInt16BE(0, 0); // NBD_INFO_EXPORT
      info.writeBigUInt64BE(BigInt(size), 2);
      info.writeUInt16BE(TRANSMISSION_FLAGS, 10);
      socket.write(optionReply(option, REP.info, info));
      socket.write(optionReply(option, REP.ack));
      if (option === OPT.go) return true;
      continue;
    }
    if (option === OPT.abort) {
      socket.write(optionReply(option, REP.ack));
      return false;
    }
    socket.write(optionReply(option, REP.errUnsup));
  }
}

async function serve(socket: Socket, source: RangeSource, onError: (e: Error) => void): Promise<void> {
  const r = new Reader(socket);
  if (!(await negotiate(socket, r, source.size))) {
    socket.end();
    return;
  }
  for (;;) {
    const h = await r.read(28);
    if (h.readUInt32BE(0) !== REQUEST_MAGIC) {
      socket.destroy();
      return;
    }
    const type = h.readUInt16BE(6);
    const handle = Buffer.from(h.subarray(8, 16));
    const offset = Number(h.readBigUInt64BE(16));
    const length = h.readUInt32BE(24);
    if (type === CMD.disc) {
      socket.end();
      return;
    }
    if (type === CMD.write) {
      await r.read(length);
      socket.write(simpleReply(handle, EPERM));
      continue;
    }
    if (type !== CMD.read || length > MAX_READ || offset + length > source.size) {
      socket.write(simpleReply(handle, type === CMD.read ? EINVAL : EPERM));
      continue;
    }
    // Reads are answered as they complete (replies carry the request's handle): qemu-img
    // keeps several in flight.
    source.read(offset, length).then(
      (data) => {
        // Header and data as two writes (no copy of the data); nothing runs between them.
        socket.write(simpleReply(handle, 0));
        socket.write(data);
      },
      (e: Error) => {
        onError(e);
        socket.write(simpleReply(handle, EIO));
      },
    );
  }
}

/** A running export; `close` stops it and removes the socket. */
export interface NbdExport {
  uri: string;
  /** The first error a read met (qemu-img only sees EIO). */
  readError(): Error | undefined;
  close(): Promise<void>;
}

/** Serves `source` on the unix socket `path` (replaced if present). */
export async function startNbdExport(path: string, source: RangeSource): Promise<NbdExport> {
  await rm(path, { force: true });
  let firstError: Error | undefined;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    serve(socket, source, (e) => {
      firstError ??= e;
    }).catch(() => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
  return {
    uri: `nbd+unix:///?socket=${path}`,
    readError: () => firstError,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(path, { force: true });
    },
  };
}
