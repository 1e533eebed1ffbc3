/** Framing: header layout, stream splitting across arbitrary chunk boundaries, length limits. */
import { describe, expect, it } from 'vitest';
import { LibvirtProtocolError } from '../../../src/drivers/libvirt';
import { PING_FRAME } from '../../../src/drivers/libvirt/keepalive';
import { MessageStatus, MessageType, REMOTE_PROGRAM } from '../../../src/drivers/libvirt/protocol/constants';
import {
  decodeMessage,
  encodeMessage,
  FrameDecoder,
  MAX_FRAME,
} from '../../../src/drivers/libvirt/protocol/packet';
import { decodeError, encodeError } from '../../../src/drivers/libvirt/protocol/types';
import { XdrReader, XdrWriter } from '../../../src/drivers/libvirt/xdr';

const header = {
  program: REMOTE_PROGRAM,
  version: 1,
  procedure: 23,
  type: MessageType.CALL,
  serial: 7,
  status: 0,
};

describe('message framing', () => {
  it('writes the length word (counting itself) and the 24-byte header', () => {
    const f = encodeMessage(header, (w) => w.string('test', 100));
    expect(f.readUInt32BE(0)).toBe(f.length);
    expect(f.length).toBe(4 + 24 + 8);
    expect(f.subarray(4, 28).toString('hex')).toBe(
      '20008086' + '00000001' + '00000017' + '00000000' + '00000007' + '00000000',
    );
    const m = decodeMessage(f);
    expect(m.header).toEqual(header);
    expect(new XdrReader(m.payload).string(100)).toBe('test');
  });

  it('encodes keepalive PING as program "keep", procedure 1, type MESSAGE, no payload', () => {
    expect(PING_FRAME.toString('hex')).toBe(
      '0000001c' + '6b656570' + '00000001' + '00000001' + '00000002' + '00000000' + '00000000',
    );
  });

  it('reassembles frames split at every possible byte boundary', () => {
    const frames = [
      encodeMessage(header, (w) => w.string('a', 8)),
      encodeMessage({ ...header, serial: 8 }),
      PING_FRAME,
    ];
    const stream = Buffer.concat(frames);
    for (let cut = 1; cut < stream.length; cut++) {
      const d = new FrameDecoder();
      const got = [...d.push(stream.subarray(0, cut)), ...d.push(stream.subarray(cut))];
      expect(got.map((g) => g.toString('hex'))).toEqual(frames.map((g) => g.toString('hex')));
      expect(d.pending).toBe(0);
    }
    // One byte at a time.
    const d = new FrameDecoder();
    const got: Buffer[] = [];
    for (const b of stream) got.push(...d.push(Buffer.from([b])));
    expect(got).toHaveLength(3);
  });

  it('rejects lengths below a header or above libvirt maximum before buffering', () => {
    expect(() => new FrameDecoder().push(Buffer.from('00000010', 'hex'))).toThrow(LibvirtProtocolError);
    const big = Buffer.alloc(4);
    big.writeUInt32BE(MAX_FRAME + 1);
    expect(() => new FrameDecoder().push(big)).toThrow(/outside libvirt's limits/);
  });

  it('rejects unknown message types and statuses', () => {
    const f = encodeMessage(header);
    f.writeInt32BE(9, 16);
    expect(() => decodeMessage(f)).toThrow(/unknown message type 9/);
    const g = encodeMessage(header);
    g.writeInt32BE(5, 24);
    expect(() => decodeMessage(g)).toThrow(/unknown message status 5/);
  });

  it('round-trips the error struct into a LibvirtError with code, domain, level and message', () => {
    const w = new XdrWriter();
    encodeError(w, {
      code: 42,
      domain: 10,
      message: 'Domain not found: no domain with matching name',
      level: 2,
    });
    const e = decodeError(new XdrReader(w.finish()));
    expect(e.code).toBe(42);
    expect(e.domain).toBe(10);
    expect(e.level).toBe(2);
    expect(e.message).toBe('Domain not found: no domain with matching name');
    const ok = encodeMessage({ ...header, type: MessageType.REPLY, status: MessageStatus.ERROR });
    expect(decodeMessage(ok).header.status).toBe(MessageStatus.ERROR);
  });
});
