/** XDR encoder/decoder: RFC 4506 layouts, padding, limits, and typed errors on bad input. */
import { describe, expect, it } from 'vitest';
import { LibvirtProtocolError } from '../../../src/drivers/libvirt';
import { XdrReader, XdrWriter } from '../../../src/drivers/libvirt/xdr';

function hex(b: Buffer): string {
  return b.toString('hex');
}

describe('XdrWriter', () => {
  it('encodes integers big-endian in 4 and 8 bytes', () => {
    const w = new XdrWriter(4);
    w.int(-2)
      .uint(0xdeadbeef)
      .bool(true)
      .hyper(-1n)
      .uhyper(2n ** 64n - 1n)
      .double(1.5);
    expect(hex(w.finish())).toBe(
      'fffffffe' + 'deadbeef' + '00000001' + 'ffffffffffffffff' + 'ffffffffffffffff' + '3ff8000000000000',
    );
  });

  it('pads strings and opaque data to 4 bytes with zeros', () => {
    const w = new XdrWriter();
    w.string('abcde', 100)
      .opaque(Buffer.from([1, 2]), 10)
      .fixedOpaque(Buffer.from([9, 9, 9]), 3);
    expect(hex(w.finish())).toBe('00000005' + '6162636465000000' + '00000002' + '01020000' + '09090900');
  });

  it('encodes optional data and arrays with their count words', () => {
    const w = new XdrWriter();
    w.optional<number>(null, (ww, v) => ww.int(v))
      .optional(7, (ww, v) => ww.int(v))
      .array([1, 2], 5, (ww, v) => ww.uint(v))
      .fixedArray([3, 4], 2, (ww, v) => ww.uint(v));
    expect(hex(w.finish())).toBe(
      '00000000' + '0000000100000007' + '000000020000000100000002' + '0000000300000004',
    );
  });

  it('counts UTF-8 bytes, not UTF-16 units, for string length', () => {
    const w = new XdrWriter();
    w.string('é', 10);
    expect(hex(w.finish())).toBe('00000002c3a90000');
  });

  it('refuses values outside the type or the declared limit', () => {
    const w = new XdrWriter();
    expect(() => w.int(2 ** 31)).toThrow(RangeError);
    expect(() => w.uint(-1)).toThrow(RangeError);
    expect(() => w.uhyper(-1n)).toThrow(RangeError);
    expect(() => w.string('toolong', 3)).toThrow(/exceeds limit 3/);
    expect(() => w.array([1, 2, 3], 2, (ww, v) => ww.int(v))).toThrow(/exceeds limit 2/);
    expect(() => w.fixedOpaque(Buffer.alloc(3), 4)).toThrow(/needs 4 bytes/);
  });
});

describe('XdrReader', () => {
  it('round-trips every type the writer produces', () => {
    const w = new XdrWriter();
    w.int(-5)
      .uint(42)
      .bool(false)
      .hyper(-(2n ** 62n))
      .uhyper(2n ** 63n)
      .double(-0.25)
      .string('héllo', 64)
      .opaque(Buffer.from('xyz'), 8)
      .optional('s', (ww, v) => ww.string(v, 8))
      .array(['a', 'bb'], 4, (ww, v) => ww.string(v, 8));
    const r = new XdrReader(w.finish());
    expect(r.int()).toBe(-5);
    expect(r.uint()).toBe(42);
    expect(r.bool()).toBe(false);
    expect(r.hyper()).toBe(-(2n ** 62n));
    expect(r.uhyper()).toBe(2n ** 63n);
    expect(r.double()).toBe(-0.25);
    expect(r.string(64)).toBe('héllo');
    expect(r.opaque(8).toString()).toBe('xyz');
    expect(r.optional((rr) => rr.string(8))).toBe('s');
    expect(r.array(4, (rr) => rr.string(8))).toEqual(['a', 'bb']);
    r.done();
  });

  it('throws LibvirtProtocolError on truncation, never reads past the end', () => {
    const r = new XdrReader(Buffer.from([0, 0, 0]));
    expect(() => r.int()).toThrow(LibvirtProtocolError);
    const s = new XdrReader(Buffer.from('0000000a6162', 'hex'));
    expect(() => s.string(100)).toThrow(/truncated string bytes/);
  });

  it('enforces declared limits before allocating', () => {
    const huge = Buffer.from('7fffffff', 'hex');
    expect(() => new XdrReader(huge).string(1024)).toThrow(/exceeds limit 1024/);
    expect(() => new XdrReader(huge).opaque(1024)).toThrow(/exceeds limit 1024/);
    // A count within the limit but impossible for the bytes left is refused too.
    const arr = Buffer.from('00001000', 'hex');
    expect(() => new XdrReader(arr).array(1_000_000, (r) => r.int())).toThrow(/cannot fit/);
  });

  it('rejects invalid bools, optional flags, UTF-8 and trailing bytes', () => {
    expect(() => new XdrReader(Buffer.from('00000002', 'hex')).bool()).toThrow(LibvirtProtocolError);
    expect(() => new XdrReader(Buffer.from('00000005', 'hex')).optional((r) => r.int())).toThrow(
      /optional-data flag/,
    );
    expect(() => new XdrReader(Buffer.from('00000002ffff0000', 'hex')).string(8)).toThrow(/UTF-8/);
    const r = new XdrReader(Buffer.from('0000000100000002', 'hex'));
    r.int();
    expect(() => r.done()).toThrow(/trailing/);
  });

  it('checks enum values against the allowed set', () => {
    expect(new XdrReader(Buffer.from('00000001', 'hex')).enumValue(new Set([0, 1]))).toBe(1);
    expect(() => new XdrReader(Buffer.from('00000009', 'hex')).enumValue(new Set([0, 1]))).toThrow(
      /enum value 9/,
    );
  });
});
