/**
 * libvirt RPC framing (virnetprotocol.x): each message is a 4-byte big-endian total length
 * (counting itself), a 24-byte header (program, version, procedure, type, serial, status)
 * and an XDR payload. `FrameDecoder` splits a byte stream into messages and rejects any
 * length outside libvirt's limits before buffering it.
 */
import { LibvirtProtocolError } from '../errors';
import { XdrReader, XdrWriter } from '../xdr';
import {
  MessageStatus,
  MessageType,
  VIR_NET_MESSAGE_HEADER_MAX,
  VIR_NET_MESSAGE_LEN_MAX,
  VIR_NET_MESSAGE_MAX,
} from './constants';

/** virNetMessageHeader */
export interface MessageHeader {
  program: number;
  version: number;
  procedure: number;
  type: number;
  serial: number;
  status: number;
}

/** One decoded message: its header and the undecoded payload. */
export interface Message {
  header: MessageHeader;
  payload: Buffer;
}

const TYPES = new Set<number>(Object.values(MessageType));
const STATUSES = new Set<number>(Object.values(MessageStatus));

/** Smallest and largest legal value of the length word. */
export const MIN_FRAME = VIR_NET_MESSAGE_LEN_MAX + VIR_NET_MESSAGE_HEADER_MAX;
export const MAX_FRAME = VIR_NET_MESSAGE_LEN_MAX + VIR_NET_MESSAGE_MAX;

/**
 * Encodes a whole frame: length word, header, then the payload written by `body`.
 * Building in one writer avoids a copy per call on the hot path.
 */
export function encodeMessage(header: MessageHeader, body?: (w: XdrWriter) => void): Buffer {
  const w = new XdrWriter(128);
  w.uint(0); // length, patched below
  w.uint(header.program);
  w.uint(header.version);
  w.int(header.procedure);
  w.int(header.type);
  w.uint(header.serial);
  w.int(header.status);
  if (body) body(w);
  const len = w.length;
  if (len > MAX_FRAME) {
    throw new LibvirtProtocolError(`message of ${len} bytes exceeds libvirt's limit of ${MAX_FRAME}`);
  }
  w.patchUint(0, len);
  return w.finish();
}

/** Decodes one complete frame (length word included). */
export function decodeMessage(frame: Buffer): Message {
  const r = new XdrReader(frame, 0, frame.length, 'message header');
  const len = r.uint();
  if (len !== frame.length) {
    throw new LibvirtProtocolError(`frame length word ${len} does not match frame size ${frame.length}`);
  }
  if (len < MIN_FRAME) throw new LibvirtProtocolError(`frame of ${len} bytes is shorter than a header`);
  const header: MessageHeader = {
    program: r.uint(),
    version: r.uint(),
    procedure: r.int(),
    type: r.int(),
    serial: r.uint(),
    status: r.int(),
  };
  if (!TYPES.has(header.type)) throw new LibvirtProtocolError(`unknown message type ${header.type}`);
  if (!STATUSES.has(header.status)) throw new LibvirtProtocolError(`unknown message status ${header.status}`);
  return { header, payload: frame.subarray(MIN_FRAME) };
}

/**
 * Splits a byte stream into frames. `push` returns the complete frames found so far and
 * throws `LibvirtProtocolError` on an impossible length (the stream is then unusable).
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private expected = -1;

  push(data: Buffer): Buffer[] {
    const out: Buffer[] = [];
    this.chunks.push(data);
    this.buffered += data.length;
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < 4) break;
        const head = this.peek4();
        if (head < MIN_FRAME || head > MAX_FRAME) {
          throw new LibvirtProtocolError(
            `frame length ${head} outside libvirt's limits [${MIN_FRAME}, ${MAX_FRAME}]`,
          );
        }
        this.expected = head;
      }
      if (this.buffered < this.expected) break;
      out.push(this.take(this.expected));
      this.expected = -1;
    }
    return out;
  }

  /** Bytes held for an incomplete frame. */
  get pending(): number {
    return this.buffered;
  }

  private peek4(): number {
    const first = this.chunks[0];
    if (first.length >= 4) return first.readUInt32BE(0);
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined.readUInt32BE(0);
  }

  private take(n: number): Buffer {
    const first = this.chunks[0];
    let frame: Buffer;
    if (first.length >= n) {
      frame = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      frame = Buffer.allocUnsafe(n);
      let off = 0;
      while (off < n) {
        const c = this.chunks[0];
        const k = Math.min(c.length, n - off);
        c.copy(frame, off, 0, k);
        off += k;
        if (k === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(k);
      }
    }
    this.buffered -= n;
    return frame;
  }
}
