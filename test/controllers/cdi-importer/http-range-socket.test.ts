/**
 * The importer's plain-http range reader (src/controllers/cdi-importer/http-range-socket.ts)
 * against a loopback TCP server that answers as the test says: the asked bytes land whole
 * and in order however the server splits them; anything but a plain 206 of those bytes is
 * NotPlainRange (node's http client reads it then); an early close, or a header that would
 * split the request, is an error.
 */
import { randomBytes } from 'node:crypto';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotPlainRange, readPlainRange } from '../../../src/controllers/cdi-importer/http-range-socket';

const data = randomBytes(3 << 20);
/** How the server answers the next request: it gets the request's text and the socket. */
let answer: (req: string, s: Socket) => void = () => {};
const seen: string[] = [];

describe('readPlainRange', () => {
  let server: Server;
  let url: URL;
  beforeAll(async () => {
    server = createServer((s) => {
      let req = '';
      s.on('data', (d) => {
        req += d.toString('latin1');
        if (req.includes('\r\n\r\n')) {
          seen.push(req);
          answer(req, s);
        }
      });
      s.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/disk.img?x=1`);
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  /** A 206 of the asked range, written in pieces of `piece` bytes (the head with the first). */
  const partial =
    (piece: number, extraHead = '') =>
    (req: string, s: Socket) => {
      const [, a, b] = /range: bytes=(\d+)-(\d+)/i.exec(req)!.map(Number);
      const body = data.subarray(a, b + 1);
      const head = Buffer.from(
        `HTTP/1.1 206 Partial Content\r\nContent-Length: ${body.length}\r\nContent-Range: bytes ${a}-${b}/${data.length}\r\n${extraHead}\r\n`,
      );
      const all = Buffer.concat([head, body]);
      for (let o = 0; o < all.length; o += piece) s.write(all.subarray(o, o + piece));
    };

  it('reads the asked bytes whole, the head and body split anyhow; sends the path, query and headers', async () => {
    for (const piece of [1 << 20, 7, 65_537]) {
      answer = partial(piece);
      const got = await readPlainRange(url, { authorization: 'Basic eDp5' }, 1000, 1000 + (1 << 20) - 1);
      expect(got.equals(data.subarray(1000, 1000 + (1 << 20)))).toBe(true);
    }
    const req = seen.at(-1)!;
    expect(req.split('\r\n')[0]).toBe('GET /disk.img?x=1 HTTP/1.1');
    expect(req).toContain('Range: bytes=1000-1049575\r\n');
    expect(req).toContain('authorization: Basic eDp5\r\n');
    // The reader's own headers are not sent twice.
    answer = partial(1 << 16);
    await readPlainRange(url, { range: 'bytes=0-0', host: 'evil' }, 0, 99);
    expect(seen.at(-1)!.match(/range:/gi)).toHaveLength(1);
    expect(seen.at(-1)).not.toContain('evil');
  });

  it('anything but a plain 206 of the asked bytes is NotPlainRange', async () => {
    const heads = [
      'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n',
      'HTTP/1.1 206 Partial Content\r\nTransfer-Encoding: chunked\r\nContent-Range: bytes 0-99/3145728\r\n\r\n',
      'HTTP/1.1 206 Partial Content\r\nContent-Length: 50\r\nContent-Range: bytes 0-49/3145728\r\n\r\n',
      'HTTP/1.1 206 Partial Content\r\nContent-Length: 100\r\nContent-Encoding: gzip\r\nContent-Range: bytes 0-99/3145728\r\n\r\n',
    ];
    for (const h of heads) {
      answer = (_req, s) => s.write(h);
      const err = await readPlainRange(url, {}, 0, 99).catch((e) => e);
      expect(err).toBeInstanceOf(NotPlainRange);
    }
  });

  it('a connection closed early, or a header splitting the request, is an error', async () => {
    answer = (req, s) => {
      partial(1 << 20)(req, { write: (b: Buffer) => s.write(b.subarray(0, b.length - 10)) } as Socket);
      s.end();
    };
    const err = await readPlainRange(url, {}, 0, 999).catch((e) => e);
    expect(err).not.toBeInstanceOf(NotPlainRange);
    expect(err.message).toBe('the connection closed after 990 of 1000 bytes');
    const before = seen.length;
    expect(() => readPlainRange(url, { 'x-a': 'b\r\nX-Injected: 1' }, 0, 9)).toThrow(/Invalid character/);
    expect(seen.length).toBe(before);
  });
});
