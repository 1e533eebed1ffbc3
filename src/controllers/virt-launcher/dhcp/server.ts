/**
 * The launcher's DHCP server for its guest (upstream's pkg/network/dhcp/server): in the
 * pod's network namespace, on UDP port 67, it answers only the guest's MAC with the one
 * lease the network setup prepared (address, router, DNS from the pod's resolv.conf,
 * MTU). Replies go to the in-pod bridge's subnet broadcast address (10.0.2.255:68), which
 * routes out of the bridge: node's dgram has no SO_BINDTODEVICE, and with no default route
 * in the pod the limited broadcast 255.255.255.255 is unroutable.
 */
import { createSocket, type Socket } from 'node:dgram';
import { broadcastOf, DHCP, decodeRequest, encodeReply, type Lease, OPT } from './packet';

/** One guest's lease, keyed by its MAC. */
export interface DhcpBinding {
  mac: string;
  lease: Lease;
}

/** Counters for tests and status (which address was handed out). */
export interface DhcpStats {
  offers: number;
  acks: number;
  naks: number;
  /** MAC -> address acknowledged last. */
  leased: Map<string, string>;
}

export class DhcpServer {
  private socket: Socket | undefined;
  readonly stats: DhcpStats = { offers: 0, acks: 0, naks: 0, leased: new Map() };
  private readonly byMac: Map<string, Lease>;

  constructor(
    bindings: DhcpBinding[],
    private readonly log: (m: string) => void = () => {},
    private readonly port = 67,
    private readonly clientPort = 68,
  ) {
    this.byMac = new Map(bindings.map((b) => [b.mac.toLowerCase(), b.lease]));
  }

  /** Binds 0.0.0.0:67 (broadcasts to 255.255.255.255 reach only an unbound-address socket). */
  async start(): Promise<void> {
    const s = createSocket({ type: 'udp4', reuseAddr: true });
    s.on('message', (msg) => this.onMessage(msg));
    s.on('error', (e) => this.log(`dhcp: ${e.message}`));
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.bind(this.port, '0.0.0.0', () => {
        s.off('error', reject);
        resolve();
      });
    });
    s.setBroadcast(true);
    this.socket = s;
  }

  async stop(): Promise<void> {
    const s = this.socket;
    this.socket = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }

  private onMessage(msg: Buffer): void {
    const req = decodeRequest(msg);
    if (!req) return;
    const lease = this.byMac.get(req.chaddr);
    if (!lease) return; // not our guest (the pod's eth0 side, or another client)
    let type: number | undefined;
    if (req.type === DHCP.DISCOVER) type = DHCP.OFFER;
    else if (req.type === DHCP.REQUEST) {
      const wanted = req.options.get(OPT.REQUESTED_IP);
      const asked = wanted?.length === 4 ? [...wanted].join('.') : req.ciaddr;
      type = asked === lease.ip || asked === '0.0.0.0' ? DHCP.ACK : DHCP.NAK;
    } else if (req.type === DHCP.INFORM) type = DHCP.ACK;
    if (type === undefined) return;
    const reply = encodeReply(req, type, lease);
    const to = broadcastOf(lease.ip, lease.prefixLength);
    this.socket?.send(reply, this.clientPort, to, (err) => {
      if (err) {
        this.log(`dhcp: reply to ${req.chaddr} via ${to}: ${err.message}`);
        return;
      }
      if (type === DHCP.OFFER) this.stats.offers++;
      else if (type === DHCP.NAK) this.stats.naks++;
      else {
        this.stats.acks++;
        this.stats.leased.set(req.chaddr, lease.ip);
      }
      this.log(
        `dhcp: ${type === DHCP.OFFER ? 'OFFER' : type === DHCP.ACK ? 'ACK' : 'NAK'} ${lease.ip} to ${req.chaddr}`,
      );
    });
  }
}
