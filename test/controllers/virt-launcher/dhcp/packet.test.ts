/** DHCPv4 encoding and decoding, the resolv.conf reader and guest MACs. */
import { describe, expect, it } from 'vitest';
import { guestMAC } from '../../../../src/controllers/virt-handler/network/guest-mac';
import { parseResolvConf } from '../../../../src/controllers/virt-handler/network/resolv-conf';
import {
  broadcastOf,
  DHCP,
  decodeRequest,
  encodeReply,
  maskOf,
  OPT,
} from '../../../../src/controllers/virt-launcher/dhcp/packet';

/** A client message as udhcpc sends it: BOOTREQUEST, xid, chaddr, cookie, options. */
function request(type: number, mac: string, extra: number[] = []): Buffer {
  const b = Buffer.alloc(240);
  b[0] = 1;
  b[1] = 1;
  b[2] = 6;
  b.writeUInt32BE(0xdeadbeef, 4);
  b.writeUInt16BE(0x8000, 10);
  Buffer.from(mac.split(':').map((x) => Number.parseInt(x, 16))).copy(b, 28);
  b.writeUInt32BE(0x63825363, 236);
  return Buffer.concat([b, Buffer.from([OPT.MESSAGE_TYPE, 1, type, ...extra, OPT.END])]);
}

const lease = {
  ip: '10.0.2.2',
  prefixLength: 24,
  serverIP: '10.0.2.1',
  router: '10.0.2.1',
  dns: ['10.255.255.53'],
  domain: 'example.org',
  hostname: 'vm1',
  mtu: 1400,
  leaseSeconds: 0xffffffff,
};

function options(reply: Buffer): Map<number, number[]> {
  const m = new Map<number, number[]>();
  let at = 240;
  while (reply[at] !== OPT.END) {
    const code = reply[at];
    const len = reply[at + 1];
    m.set(code, [...reply.subarray(at + 2, at + 2 + len)]);
    at += 2 + len;
  }
  return m;
}

describe('DHCP packets', () => {
  it('decodes a DISCOVER and a REQUEST with its requested address', () => {
    const d = decodeRequest(request(DHCP.DISCOVER, '02:aa:bb:cc:dd:ee'));
    expect(d).toMatchObject({
      xid: 0xdeadbeef,
      flags: 0x8000,
      chaddr: '02:aa:bb:cc:dd:ee',
      type: DHCP.DISCOVER,
    });
    const r = decodeRequest(request(DHCP.REQUEST, '02:aa:bb:cc:dd:ee', [OPT.REQUESTED_IP, 4, 10, 0, 2, 2]));
    expect([...(r?.options.get(OPT.REQUESTED_IP) ?? [])]).toEqual([10, 0, 2, 2]);
  });

  it('refuses what is not a DHCP request', () => {
    expect(decodeRequest(Buffer.alloc(100))).toBeUndefined();
    const reply = request(DHCP.DISCOVER, '02:aa:bb:cc:dd:ee');
    reply[0] = 2;
    expect(decodeRequest(reply)).toBeUndefined();
    const truncated = Buffer.concat([
      request(DHCP.DISCOVER, '02:aa:bb:cc:dd:ee').subarray(0, 240),
      Buffer.from([OPT.HOSTNAME, 50, 1]),
    ]);
    expect(decodeRequest(truncated)).toBeUndefined();
  });

  it('encodes an OFFER with address, mask, router, DNS, domain, hostname, MTU, lease', () => {
    const req = decodeRequest(request(DHCP.DISCOVER, '02:aa:bb:cc:dd:ee'));
    if (!req) throw new Error('no request');
    const reply = encodeReply(req, DHCP.OFFER, lease);
    expect(reply[0]).toBe(2);
    expect(reply.readUInt32BE(4)).toBe(0xdeadbeef);
    expect([...reply.subarray(16, 20)]).toEqual([10, 0, 2, 2]);
    expect([...reply.subarray(28, 34)]).toEqual([0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee]);
    const o = options(reply);
    expect(o.get(OPT.MESSAGE_TYPE)).toEqual([DHCP.OFFER]);
    expect(o.get(OPT.SERVER_ID)).toEqual([10, 0, 2, 1]);
    expect(o.get(OPT.SUBNET_MASK)).toEqual([255, 255, 255, 0]);
    expect(o.get(OPT.ROUTER)).toEqual([10, 0, 2, 1]);
    expect(o.get(OPT.DNS)).toEqual([10, 255, 255, 53]);
    expect(Buffer.from(o.get(OPT.DOMAIN_NAME) ?? []).toString()).toBe('example.org');
    expect(Buffer.from(o.get(OPT.HOSTNAME) ?? []).toString()).toBe('vm1');
    expect(o.get(OPT.MTU)).toEqual([0x05, 0x78]);
    expect(o.get(OPT.LEASE_TIME)).toEqual([255, 255, 255, 255]);
    const nak = options(encodeReply(req, DHCP.NAK, lease));
    expect(nak.get(OPT.MESSAGE_TYPE)).toEqual([DHCP.NAK]);
    expect(nak.has(OPT.ROUTER)).toBe(false);
  });

  it('masks and broadcast addresses', () => {
    expect(maskOf(24)).toBe('255.255.255.0');
    expect(maskOf(30)).toBe('255.255.255.252');
    expect(broadcastOf('10.0.2.2', 24)).toBe('10.0.2.255');
    expect(broadcastOf('10.244.77.9', 16)).toBe('10.244.255.255');
  });
});

describe('resolv.conf and guest MACs', () => {
  it('keeps IPv4 nameservers and plain search domains only', () => {
    expect(
      parseResolvConf(
        'nameserver 10.0.0.53\nnameserver ::1\nsearch a.example b_bad.example c.example\noptions ndots:5\n',
      ),
    ).toEqual({
      nameservers: ['10.0.0.53'],
      search: ['a.example', 'c.example'],
    });
  });

  it('takes the spec MAC normalised, else a stable locally administered one', () => {
    expect(guestMAC('DE-AD-BE-EF-00-01', 'u', 'default', 'p')).toBe('de:ad:be:ef:00:01');
    expect(() => guestMAC('de:ad', 'u', 'default', 'spec.domain.devices.interfaces[0]')).toThrow(
      'spec.domain.devices.interfaces[0].macAddress: "de:ad" is not a MAC address',
    );
    const a = guestMAC(undefined, 'uid-1', 'default', 'p');
    expect(a).toBe(guestMAC(undefined, 'uid-1', 'default', 'p'));
    expect(a).not.toBe(guestMAC(undefined, 'uid-2', 'default', 'p'));
    expect(Number.parseInt(a.slice(0, 2), 16) & 0x03).toBe(0x02);
  });
});
