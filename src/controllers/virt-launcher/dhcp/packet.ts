/**
 * DHCPv4 messages (RFC 2131/2132): decoding what a client sends, encoding the server's
 * OFFER/ACK/NAK. Only what a single-guest server needs: the fixed header, the magic
 * cookie, and options as type-length-value.
 */

export const DHCP = {
  DISCOVER: 1,
  OFFER: 2,
  REQUEST: 3,
  DECLINE: 4,
  ACK: 5,
  NAK: 6,
  RELEASE: 7,
  INFORM: 8,
} as const;

export const OPT = {
  SUBNET_MASK: 1,
  ROUTER: 3,
  DNS: 6,
  HOSTNAME: 12,
  DOMAIN_NAME: 15,
  BROADCAST: 28,
  MTU: 26,
  REQUESTED_IP: 50,
  LEASE_TIME: 51,
  MESSAGE_TYPE: 53,
  SERVER_ID: 54,
  END: 255,
  PAD: 0,
} as const;

const COOKIE = 0x63825363;
const HEADER = 236;

/** A decoded client message. */
export interface DhcpRequest {
  op: number;
  xid: number;
  flags: number;
  ciaddr: string;
  /** Client hardware address, lower-case colon form. */
  chaddr: string;
  type: number | undefined;
  options: Map<number, Buffer>;
}

const ip = (b: Buffer, at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;

function ipBytes(text: string): number[] {
  const parts = text.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`${JSON.stringify(text)} is not an IPv4 address`);
  }
  return parts;
}

/** Decodes a BOOTREQUEST; undefined for anything that is not a well-formed DHCP request. */
export function decodeRequest(b: Buffer): DhcpRequest | undefined {
  if (b.length < HEADER + 4 || b[0] !== 1 || b[1] !== 1 || b[2] !== 6) return undefined;
  if (b.readUInt32BE(HEADER) !== COOKIE) return undefined;
  const options = new Map<number, Buffer>();
  let at = HEADER + 4;
  while (at < b.length) {
    const code = b[at++];
    if (code === OPT.PAD) continue;
    if (code === OPT.END) break;
    const len = b[at++];
    if (len === undefined || at + len > b.length) return undefined;
    options.set(code, b.subarray(at, at + len));
    at += len;
  }
  const mt = options.get(OPT.MESSAGE_TYPE);
  return {
    op: b[0],
    xid: b.readUInt32BE(4),
    flags: b.readUInt16BE(10),
    ciaddr: ip(b, 12),
    chaddr: [...b.subarray(28, 34)].map((x) => x.toString(16).padStart(2, '0')).join(':'),
    type: mt?.length === 1 ? mt[0] : undefined,
    options,
  };
}

/** What the server offers (one lease). */
export interface Lease {
  ip: string;
  prefixLength: number;
  serverIP: string;
  router?: string;
  dns: string[];
  domain?: string;
  hostname?: string;
  mtu: number;
  /** Seconds; 0xffffffff is infinite (upstream's choice). */
  leaseSeconds: number;
}

export function maskOf(prefix: number): string {
  const m = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return [24, 16, 8, 0].map((s) => (m >>> s) & 0xff).join('.');
}

export function broadcastOf(ipText: string, prefix: number): string {
  const v = ipBytes(ipText).reduce((a, x) => ((a << 8) | x) >>> 0, 0);
  const host = prefix === 32 ? 0 : (0xffffffff >>> prefix) >>> 0;
  const b = (v | host) >>> 0;
  return [24, 16, 8, 0].map((s) => (b >>> s) & 0xff).join('.');
}

/** Encodes the reply of `type` (OFFER, ACK or NAK) to `req`. */
export function encodeReply(req: DhcpRequest, type: number, lease: Lease): Buffer {
  const b = Buffer.alloc(HEADER + 4);
  b[0] = 2; // BOOTREPLY
  b[1] = 1;
  b[2] = 6;
  b.writeUInt32BE(req.xid, 4);
  b.writeUInt16BE(req.flags, 10);
  if (type !== DHCP.NAK) Buffer.from(ipBytes(lease.ip)).copy(b, 16); // yiaddr
  Buffer.from(ipBytes(lease.serverIP)).copy(b, 20); // siaddr
  Buffer.from(req.chaddr.split(':').map((x) => Number.parseInt(x, 16))).copy(b, 28);
  b.writeUInt32BE(COOKIE, HEADER);
  const opts: number[] = [];
  const put = (code: number, bytes: number[]) => {
    if (bytes.length > 255) throw new Error(`DHCP option ${code} is longer than 255 bytes`);
    opts.push(code, bytes.length, ...bytes);
  };
  put(OPT.MESSAGE_TYPE, [type]);
  put(OPT.SERVER_ID, ipBytes(lease.serverIP));
  if (type !== DHCP.NAK) {
    put(
      OPT.LEASE_TIME,
      [24, 16, 8, 0].map((s) => (lease.leaseSeconds >>> s) & 0xff),
    );
    put(OPT.SUBNET_MASK, ipBytes(maskOf(lease.prefixLength)));
    put(OPT.BROADCAST, ipBytes(broadcastOf(lease.ip, lease.prefixLength)));
    if (lease.router) put(OPT.ROUTER, ipBytes(lease.router));
    if (lease.dns.length > 0) put(OPT.DNS, lease.dns.flatMap(ipBytes));
    if (lease.domain) put(OPT.DOMAIN_NAME, [...Buffer.from(lease.domain, 'ascii')]);
    if (lease.hostname) put(OPT.HOSTNAME, [...Buffer.from(lease.hostname, 'ascii')]);
    put(OPT.MTU, [(lease.mtu >> 8) & 0xff, lease.mtu & 0xff]);
  }
  opts.push(OPT.END);
  return Buffer.concat([b, Buffer.from(opts)]);
}
