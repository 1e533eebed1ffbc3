/**
 * PPM (what QEMU's screendump writes, and libvirt's screenshot streams) to PNG (what
 * upstream's `vnc/screenshot` answers), with Node's zlib and a CRC-32 of its own: no
 * image library. Only binary PPM (P6) with 8-bit samples is read; anything else is
 * refused with what was found.
 */
import { deflateSync } from 'node:zlib';

/** An RGB image: `width * height * 3` bytes, rows top to bottom. */
export interface RgbImage {
  width: number;
  height: number;
  rgb: Buffer;
}

/** The 8 bytes every PNG starts with. */
export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (ISO 3309, as PNG chunks use it). */
export function crc32(...parts: Buffer[]): number {
  let c = 0xffffffff;
  for (const b of parts)
    for (let i = 0; i < b.length; i++) c = (CRC_TABLE[(c ^ (b[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** Parses a binary PPM (P6, maxval 255). */
export function parsePpm(data: Buffer): RgbImage {
  let pos = 0;
  // Header tokens are separated by whitespace; `#` starts a comment up to the line end.
  const token = (): string => {
    for (;;) {
      while (pos < data.length && /\s/.test(String.fromCharCode(data[pos] as number))) pos++;
      if (data[pos] !== 0x23) break;
      while (pos < data.length && data[pos] !== 0x0a) pos++;
    }
    const start = pos;
    while (pos < data.length && !/\s/.test(String.fromCharCode(data[pos] as number))) pos++;
    return data.subarray(start, pos).toString('latin1');
  };
  const magic = token();
  if (magic !== 'P6')
    throw new Error(`screenshot: not a binary PPM (magic ${JSON.stringify(magic.slice(0, 8))})`);
  const width = Number(token());
  const height = Number(token());
  const maxval = Number(token());
  if (!Number.isInteger(width) || width <= 0 || !Number.isInteger(height) || height <= 0) {
    throw new Error(`screenshot: PPM size ${width}x${height} is not a size`);
  }
  if (maxval !== 255) throw new Error(`screenshot: PPM maxval ${maxval}: only 8-bit samples (255) are read`);
  pos++; // the single whitespace byte after maxval
  const need = width * height * 3;
  if (data.length - pos < need) {
    throw new Error(
      `screenshot: PPM ${width}x${height} needs ${need} bytes of pixels, has ${data.length - pos}`,
    );
  }
  return { width, height, rgb: data.subarray(pos, pos + need) };
}

function chunk(type: string, body: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  const t = Buffer.from(type, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(t, body));
  return Buffer.concat([len, t, body, crc]);
}

/** Encodes an RGB image as a PNG (8-bit truecolour, no filtering, zlib-deflated). */
export function encodePng(img: RgbImage): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(img.width, 0);
  ihdr.writeUInt32BE(img.height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: truecolour
  // compression 0, filter method 0, interlace 0: already zero
  const stride = img.width * 3;
  const raw = Buffer.alloc((stride + 1) * img.height);
  for (let y = 0; y < img.height; y++) {
    // Each scanline starts with its filter type: 0 (None).
    img.rgb.copy(raw, y * (stride + 1) + 1, y * stride, (y + 1) * stride);
  }
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A screenshot as PNG: PPM is converted, PNG passes through, anything else is refused. */
export function screenshotPng(mime: string, data: Buffer): Buffer {
  if (mime === 'image/png') return data;
  if (mime === 'image/x-portable-pixmap' || data.subarray(0, 2).toString('latin1') === 'P6') {
    return encodePng(parsePpm(data));
  }
  throw new Error(`screenshot: cannot convert ${mime} to PNG`);
}
