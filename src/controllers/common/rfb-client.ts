/**
 * The smallest RFB (VNC, RFC 6143) client: the 3.8 handshake with security type None, a
 * shared ClientInit, the ServerInit's framebuffer size and name, and PointerEvent. What
 * virt-api needs to wake a screensaver before a screenshot (upstream's `moveCursor`),
 * over the same VNC stream a viewer gets.
 */
import type { Duplex } from 'node:stream';

/** What the server said in its ServerInit. */
export interface RfbSession {
  /** The server's protocol version line, e.g. `RFB 003.008`. */
  version: string;
  width: number;
  height: number;
  name: string;
  /** Sends a PointerEvent: button mask, position. */
  pointer(mask: number, x: number, y: number): void;
}

/** Reads exactly `n` bytes from a stream, failing when it ends first or `timeoutMs` passes. */
function reader(s: Duplex, timeoutMs: number): (n: number) => Promise<Buffer> {
  let buf = Buffer.alloc(0);
  let want: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | undefined;
  let failed: Error | undefined;
  const pump = () => {
    if (want && buf.length >= want.n) {
      const out = buf.subarray(0, want.n);
      buf = buf.subarray(want.n);
      const w = want;
      want = undefined;
      w.resolve(out);
    }
  };
  const fail = (e: Error) => {
    failed ??= e;
    want?.reject(failed);
    want = undefined;
  };
  s.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
    pump();
  });
  s.once('end', () => fail(new Error('RFB: the server closed the connection during the handshake')));
  s.once('error', fail);
  return (n) =>
    new Promise<Buffer>((resolve, reject) => {
      if (failed) return reject(failed);
      const timer = setTimeout(() => fail(new Error(`RFB: no answer within ${timeoutMs} ms`)), timeoutMs);
      want = {
        n,
        resolve: (b) => {
          clearTimeout(timer);
          resolve(b);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      pump();
    });
}

/** Runs the handshake on `s` (security None only, as QEMU's VNC on a unix socket offers). */
export async function rfbHandshake(s: Duplex, timeoutMs = 10_000): Promise<RfbSession> {
  const read = reader(s, timeoutMs);
  const version = (await read(12)).toString('latin1');
  if (!/^RFB \d{3}\.\d{3}\n$/.test(version))
    throw new Error(`RFB: not an RFB server (${JSON.stringify(version)})`);
  s.write('RFB 003.008\n');
  const count = (await read(1))[0] as number;
  if (count === 0) {
    const len = (await read(4)).readUInt32BE(0);
    throw new Error(`RFB: the server refused the connection: ${(await read(len)).toString('utf8')}`);
  }
  const types = [...(await read(count))];
  if (!types.includes(1))
    throw new Error(`RFB: security type None not offered (offered ${types.join(', ')})`);
  s.write(Buffer.from([1]));
  const result = (await read(4)).readUInt32BE(0);
  if (result !== 0) throw new Error(`RFB: security handshake failed (${result})`);
  s.write(Buffer.from([1])); // ClientInit: shared, so other viewers stay connected
  const init = await read(24);
  const nameLen = init.readUInt32BE(20);
  const name = (await read(nameLen)).toString('utf8');
  return {
    version: version.trim(),
    width: init.readUInt16BE(0),
    height: init.readUInt16BE(2),
    name,
    pointer: (mask, x, y) => {
      const m = Buffer.alloc(6);
      m[0] = 5; // PointerEvent
      m[1] = mask;
      m.writeUInt16BE(x, 2);
      m.writeUInt16BE(y, 4);
      s.write(m);
    },
  };
}
