/**
 * PPM -> PNG: the PNG decodes (signature, chunk CRCs checked against zlib's crc32, IHDR,
 * inflated scanlines) back to the PPM's pixels; bad PPMs are refused with what was found.
 */
import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  crc32,
  encodePng,
  PNG_SIGNATURE,
  parsePpm,
  screenshotPng,
} from '../../../src/controllers/common/ppm-to-png';

function ppm(w: number, h: number, comment = false): Buffer {
  const px = Buffer.alloc(w * h * 3);
  for (let i = 0; i < px.length; i++) px[i] = (i * 37) & 0xff;
  return Buffer.concat([Buffer.from(`P6\n${comment ? '# qemu\n' : ''}${w} ${h}\n255\n`, 'latin1'), px]);
}

/** Splits a PNG into chunks, checking each CRC. */
function chunks(png: Buffer): Array<{ type: string; body: Buffer }> {
  const out: Array<{ type: string; body: Buffer }> = [];
  let pos = 8;
  while (pos < png.length) {
    const len = png.readUInt32BE(pos);
    const type = png.subarray(pos + 4, pos + 8).toString('latin1');
    const body = png.subarray(pos + 8, pos + 8 + len);
    expect(png.readUInt32BE(pos + 8 + len)).toBe(crc32(Buffer.from(type, 'latin1'), body));
    out.push({ type, body });
    pos += 12 + len;
  }
  return out;
}

describe('PPM to PNG', () => {
  it('crc32 matches the PNG reference value', () => {
    // The IEND chunk's CRC is fixed by the PNG specification.
    expect(crc32(Buffer.from('IEND', 'latin1'))).toBe(0xae426082);
    expect(crc32(Buffer.from('123456789', 'latin1'))).toBe(0xcbf43926);
  });

  it('encodes the pixels losslessly', () => {
    const src = ppm(7, 5, true);
    const img = parsePpm(src);
    expect([img.width, img.height]).toEqual([7, 5]);
    const png = screenshotPng('image/x-portable-pixmap', src);
    expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    const cs = chunks(png);
    expect(cs.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    const ihdr = cs[0]!.body;
    expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9]]).toEqual([7, 5, 8, 2]);
    const raw = inflateSync(cs[1]!.body);
    expect(raw.length).toBe(5 * (7 * 3 + 1));
    for (let y = 0; y < 5; y++) {
      expect(raw[y * 22]).toBe(0);
      expect(raw.subarray(y * 22 + 1, (y + 1) * 22).equals(img.rgb.subarray(y * 21, (y + 1) * 21))).toBe(
        true,
      );
    }
  });

  it('passes a PNG through and refuses what it cannot read', () => {
    const png = encodePng({ width: 1, height: 1, rgb: Buffer.from([1, 2, 3]) });
    expect(screenshotPng('image/png', png)).toBe(png);
    expect(() => parsePpm(Buffer.from('P3\n1 1\n255\n1 2 3\n'))).toThrow('not a binary PPM (magic "P3")');
    expect(() => parsePpm(Buffer.from('P6\n2 2\n65535\n'))).toThrow('maxval 65535');
    expect(() => parsePpm(Buffer.from('P6\n2 2\n255\nabc'))).toThrow('needs 12 bytes of pixels, has 3');
    expect(() => screenshotPng('image/jpeg', Buffer.from('xx'))).toThrow('cannot convert image/jpeg');
  });
});
