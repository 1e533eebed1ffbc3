/** Reading an HTTP request body with a size limit (the components' REST servers). */
import type { Readable } from 'node:stream';

/**
 * The body of `req`, up to `limit` bytes. Over it, the promise rejects with `tooLarge()`
 * and the rest is either drained (`'drain'`: the connection stays usable for the error
 * answer) or the request destroyed (`'destroy'`).
 */
export function readLimitedBody(
  req: Readable,
  limit: number,
  tooLarge: () => Error,
  over: 'drain' | 'destroy',
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(tooLarge());
        if (over === 'drain') req.resume();
        else req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
