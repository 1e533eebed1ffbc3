/**
 * XDR (RFC 4506) encoding and decoding, as libvirt's RPC protocol uses it: big-endian
 * 4-byte units, with every variable-length item bounded by the protocol's declared limit.
 * The reader never trusts a length from the wire: it checks the limit and the bytes left
 * before allocating, and throws `LibvirtProtocolError` on anything malformed.
 */
import { LibvirtProtocolError } from './errors';

const textDecoder = new TextDecoder('utf-8', { fatal: true });

function pad4(n: number): number {
  return (4 - (n & 3)) & 3;
}

/** Appends XDR items to a growable buffer. */
export class XdrWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialSize = 256) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.pos;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** `what` names the argument in the error when the value does not fit. */
  int(v: number, what = 'int'): this {
    if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) {
      throw new RangeError(`${what}: must be a 32-bit integer, got ${v}`);
    }
    this.ensure(4);
    this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  uint(v: number, what = 'unsigned int'): this {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
      throw new RangeError(`${what}: must be an unsigned 32-bit integer, got ${v}`);
    }
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  bool(v: boolean): this {
    return this.int(v ? 1 : 0);
  }

  hyper(v: bigint | number, what = 'hyper'): this {
    if (typeof v === 'number' && !Number.isSafeInteger(v))
      throw new RangeError(`${what}: must be an integer, got ${v}`);
    const b = BigInt(v);
    if (b < -(1n << 63n) || b >= 1n << 63n)
      throw new RangeError(`${what}: must be a 64-bit integer, got ${v}`);
    this.ensure(8);
    this.buf.writeBigInt64BE(b, this.pos);
    this.pos += 8;
    return this;
  }

  uhyper(v: bigint | number, what = 'unsigned hyper'): this {
    if (typeof v === 'number' && !Number.isSafeInteger(v))
      throw new RangeError(`${what}: must be an integer, got ${v}`);
    const b = BigInt(v);
    if (b < 0n || b >= 1n << 64n)
      throw new RangeError(`${what}: must be an unsigned 64-bit integer, got ${v}`);
    this.ensure(8);
    this.buf.writeBigUInt64BE(b, this.pos);
    this.pos += 8;
    return this;
  }

  double(v: number): this {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
    return this;
  }

  /** Fixed-length opaque: exactly `len` bytes, padded to 4. */
  fixedOpaque(data: Uint8Array, len: number): this {
    if (data.length !== len) throw new RangeError(`XDR fixed opaque needs ${len} bytes, got ${data.length}`);
    const p = pad4(len);
    this.ensure(len + p);
    this.buf.set(data, this.pos);
    this.pos += len;
    this.buf.fill(0, this.pos, this.pos + p);
    this.pos += p;
    return this;
  }

  /** Variable-length opaque: length word, bytes, padding. */
  opaque(data: Uint8Array, max: number): this {
    if (data.length > max) throw new RangeError(`XDR opaque of ${data.length} bytes exceeds limit ${max}`);
    this.uint(data.length);
    return this.fixedOpaque(data, data.length);
  }

  /** A UTF-8 string bounded by `max` bytes. */
  string(s: string, max: number): this {
    const len = Buffer.byteLength(s, 'utf8');
    if (len > max) throw new RangeError(`XDR string of ${len} bytes exceeds limit ${max}`);
    const p = pad4(len);
    this.ensure(4 + len + p);
    this.buf.writeUInt32BE(len, this.pos);
    this.pos += 4;
    this.buf.write(s, this.pos, len, 'utf8');
    this.pos += len;
    this.buf.fill(0, this.pos, this.pos + p);
    this.pos += p;
    return this;
  }

  /** Optional data (`type *name`): a boolean, then the value when present. */
  optional<T>(v: T | null | undefined, enc: (w: XdrWriter, v: T) => void): this {
    if (v === null || v === undefined) return this.int(0);
    this.int(1);
    enc(this, v);
    return this;
  }

  /** Variable-length array bounded by `max` elements. */
  array<T>(items: readonly T[], max: number, enc: (w: XdrWriter, v: T) => void): this {
    if (items.length > max) throw new RangeError(`XDR array of ${items.length} items exceeds limit ${max}`);
    this.uint(items.length);
    for (const it of items) enc(this, it);
    return this;
  }

  /** Fixed-length array: exactly `len` elements, no length word. */
  fixedArray<T>(items: readonly T[], len: number, enc: (w: XdrWriter, v: T) => void): this {
    if (items.length !== len) throw new RangeError(`XDR fixed array needs ${len} items, got ${items.length}`);
    for (const it of items) enc(this, it);
    return this;
  }

  /** Raw bytes, not padded (stream packets carry unframed data). */
  raw(data: Uint8Array): this {
    this.ensure(data.length);
    this.buf.set(data, this.pos);
    this.pos += data.length;
    return this;
  }

  /** Writes a 4-byte big-endian unsigned word at an earlier offset (used for the frame length). */
  patchUint(offset: number, v: number): void {
    this.buf.writeUInt32BE(v, offset);
  }

  /** The bytes written (a view; copy it if the writer is reused). */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** Reads XDR items from a buffer, bounds-checking every step. */
export class XdrReader {
  private pos: number;
  private readonly end: number;

  constructor(
    private readonly buf: Buffer,
    offset = 0,
    end = buf.length,
    private readonly what = 'message',
  ) {
    this.pos = offset;
    this.end = end;
  }

  /** Current offset into the underlying buffer. */
  get offset(): number {
    return this.pos;
  }

  /** Bytes not yet read. */
  get remaining(): number {
    return this.end - this.pos;
  }

  private fail(msg: string): never {
    throw new LibvirtProtocolError(`malformed ${this.what} at byte ${this.pos}: ${msg}`);
  }

  private need(n: number, item: string): void {
    if (this.end - this.pos < n) {
      this.fail(`truncated ${item}: needs ${n} bytes, ${this.end - this.pos} left`);
    }
  }

  int(): number {
    this.need(4, 'int');
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  uint(): number {
    this.need(4, 'unsigned int');
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  bool(): boolean {
    const v = this.int();
    if (v !== 0 && v !== 1) this.fail(`bool must be 0 or 1, got ${v}`);
    return v === 1;
  }

  /** An enum value, checked against the allowed values when given. */
  enumValue(allowed?: ReadonlySet<number>): number {
    const v = this.int();
    if (allowed && !allowed.has(v)) this.fail(`unexpected enum value ${v}`);
    return v;
  }

  hyper(): bigint {
    this.need(8, 'hyper');
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  uhyper(): bigint {
    this.need(8, 'unsigned hyper');
    const v = this.buf.readBigUInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  /** An unsigned hyper as a JS number (exact up to 2^53). */
  uhyperNumber(): number {
    return Number(this.uhyper());
  }

  /** A signed hyper as a JS number (exact within ±2^53). */
  hyperNumber(): number {
    return Number(this.hyper());
  }

  double(): number {
    this.need(8, 'double');
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  fixedOpaque(len: number): Buffer {
    const total = len + pad4(len);
    this.need(total, `opaque[${len}]`);
    const out = Buffer.from(this.buf.subarray(this.pos, this.pos + len));
    this.pos += total;
    return out;
  }

  private length(max: number, item: string): number {
    const len = this.uint();
    if (len > max) this.fail(`${item} length ${len} exceeds limit ${max}`);
    return len;
  }

  opaque(max: number): Buffer {
    const len = this.length(max, 'opaque');
    return this.fixedOpaque(len);
  }

  string(max: number): string {
    const len = this.length(max, 'string');
    const total = len + pad4(len);
    this.need(total, 'string bytes');
    let s: string;
    try {
      s = textDecoder.decode(this.buf.subarray(this.pos, this.pos + len));
    } catch {
      this.fail('string is not valid UTF-8');
    }
    this.pos += total;
    return s;
  }

  optional<T>(dec: (r: XdrReader) => T): T | null {
    const present = this.int();
    if (present === 0) return null;
    if (present !== 1) this.fail(`optional-data flag must be 0 or 1, got ${present}`);
    return dec(this);
  }

  array<T>(max: number, dec: (r: XdrReader) => T, minItemBytes = 4): T[] {
    const n = this.length(max, 'array');
    // Each element takes at least minItemBytes: reject impossible counts before allocating.
    if (n * minItemBytes > this.end - this.pos) this.fail(`array of ${n} items cannot fit in the bytes left`);
    const out: T[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = dec(this);
    return out;
  }

  fixedArray<T>(len: number, dec: (r: XdrReader) => T): T[] {
    const out: T[] = new Array(len);
    for (let i = 0; i < len; i++) out[i] = dec(this);
    return out;
  }

  /** Asserts the whole buffer was consumed: trailing bytes mean a layout mismatch. */
  done(): void {
    if (this.pos !== this.end) this.fail(`${this.end - this.pos} unexpected trailing bytes`);
  }
}
