/**
 * The `file` part of a multipart/form-data body, streamed (CDI's formReadCloser): the
 * upload-form paths carry the image as the form's `file` field, of any size, so the body
 * is never held whole. Parts before it are skipped; what follows it is not read.
 */
import { Transform, type TransformCallback } from 'node:stream';

/** The boundary of a multipart/form-data content type, or undefined. */
export function formBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

const MAX_HEADER_BYTES = 16 << 10;

/** A Transform passing on only the bytes of the `file` part; errors when the body ends without one. */
export class MultipartFileExtractor extends Transform {
  private readonly delimiter: Buffer;
  // The body as if preceded by CRLF, so the first boundary matches the same delimiter.
  private buf: Buffer = Buffer.from('\r\n');
  private state: 'preamble' | 'headers' | 'file' | 'skip' | 'done' = 'preamble';

  constructor(boundary: string) {
    super();
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.state === 'done') {
      cb();
      return;
    }
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    try {
      this.scan();
      cb();
    } catch (e) {
      cb(e as Error);
    }
  }

  override _flush(cb: TransformCallback): void {
    cb(this.state === 'done' ? undefined : new Error('the form has no complete "file" part'));
  }

  private scan(): void {
    for (;;) {
      if (this.state === 'preamble' || this.state === 'skip' || this.state === 'file') {
        const at = this.buf.indexOf(this.delimiter);
        if (at < 0) {
          // Keep what could be the start of a delimiter split across chunks.
          const keep = Math.min(this.buf.length, this.delimiter.length - 1);
          if (this.state === 'file') this.push(this.buf.subarray(0, this.buf.length - keep));
          this.buf = this.buf.subarray(this.buf.length - keep);
          return;
        }
        if (this.state === 'file') {
          this.push(this.buf.subarray(0, at));
          this.state = 'done';
          this.buf = Buffer.alloc(0);
          return;
        }
        this.buf = this.buf.subarray(at + this.delimiter.length);
        this.state = 'headers';
      }
      if (this.state === 'headers') {
        // After the delimiter: `--` ends the form, else CRLF and the part's headers.
        if (this.buf.length < 2) return;
        if (this.buf.subarray(0, 2).toString() === '--') throw new Error('the form has no "file" part');
        const end = this.buf.indexOf('\r\n\r\n');
        if (end < 0) {
          if (this.buf.length > MAX_HEADER_BYTES) throw new Error('a form part header is too long');
          return;
        }
        const headers = this.buf.subarray(0, end).toString('latin1');
        this.buf = this.buf.subarray(end + 4);
        const disposition = /^content-disposition:\s*form-data\s*;(.*)$/im.exec(headers)?.[1] ?? '';
        const name = /(?:^|;)\s*name="([^"]*)"/i.exec(disposition)?.[1];
        this.state = name === 'file' ? 'file' : 'skip';
      }
    }
  }
}
