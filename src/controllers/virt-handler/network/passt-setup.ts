/**
 * Phase 1 of the passt binding on the pod network: no tap or bridge (libvirt starts passt,
 * which QEMU reaches over a socket), upstream's sysctls for passt (it answers pings and
 * binds the forwarded ports in the pod as QEMU's user), and, in a pod without a default
 * route (local mode's pod network, by design), a default route that goes nowhere.
 *
 * Why the route: Debian 12's passt (0.0~git20230309) takes its addresses and gateway from
 * the interface libvirt names (`--interface eth0`) and refuses to start ("External
 * interface not usable") when that interface has no default route; libvirt 9.0 passes it
 * no `--gateway`. So the pod gets `default via 169.254.1.1 dev eth0 onlink` (link-local,
 * never a real host: the fake gateway Calico gives its pods), and an nftables table
 * `inet kubevirt_passt` drops every packet leaving eth0 for an address off the pod's
 * subnet (IPv6: off link-local) before it is routed or resolved: the route satisfies
 * passt, and nothing leaves the pod network through it. A pod with its own default route
 * (a cluster's) is left as it is.
 */
import type { CachedInterface } from '../../common/network-cache';
import { runInNetns } from '../../common/run-tool';
import { type LinkInfo, routesVia } from './netns-links';

/** The account passt runs as (QEMU's, upstream's 107). */
const PASST_USER = 107;
/** The gateway passt is shown in a pod without one. */
export const PASST_FAKE_GATEWAY = '169.254.1.1';
/** The nftables table that keeps that route from carrying anything out. */
export const PASST_TABLE = 'kubevirt_passt';

const IFNAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** `ip/prefix`'s network in CIDR form (IPv4). */
export function subnetOf(ip: string, prefix: number): string {
  const m = IPV4.exec(ip);
  if (!m || m.slice(1).some((o) => Number(o) > 255) || !Number.isInteger(prefix) || prefix < 0 || prefix > 32)
    throw new Error(`${JSON.stringify(ip)}/${prefix} is not an IPv4 address and prefix`);
  const n = m.slice(1).reduce((a, o) => ((a << 8) | Number(o)) >>> 0, 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const net = (n & mask) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (net >>> s) & 0xff).join('.')}/${prefix}`;
}

/** The ruleset for `nft -f -`: recreated whole, so applying it again changes nothing. */
export function passtEgressRuleset(podIf: string, podSubnet: string): string {
  if (!IFNAME.test(podIf)) throw new Error(`${JSON.stringify(podIf)} is not an interface name`);
  if (!/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/.test(podSubnet))
    throw new Error(`${JSON.stringify(podSubnet)} is not an IPv4 CIDR`);
  return [
    `table inet ${PASST_TABLE}`,
    `delete table inet ${PASST_TABLE}`,
    `table inet ${PASST_TABLE} {`,
    '  chain output {',
    '    type filter hook output priority filter; policy accept;',
    `    oifname "${podIf}" ip daddr != ${podSubnet} counter drop`,
    `    oifname "${podIf}" ip6 daddr != fe80::/10 counter drop`,
    '  }',
    '}',
    '',
  ].join('\n');
}

export interface PasstSetupInput {
  netns: string;
  pod: LinkInfo;
  podAddr: { local: string; prefixlen: number };
  name: string;
  mac: string;
  dns: { nameservers: string[]; search: string[] };
  hostname: string;
}

/** Sets the pod up for passt; returns the cache entry (no DHCP of ours: passt answers it). */
export async function setUpPasst(i: PasstSetupInput): Promise<CachedInterface> {
  const ns = (cmd: string, args: string[], input?: string) => runInNetns(i.netns, cmd, args, input);
  await ns('sysctl', ['-q', '-w', `net.ipv4.ping_group_range=${PASST_USER} ${PASST_USER}`]);
  await ns('sysctl', ['-q', '-w', 'net.ipv4.ip_unprivileged_port_start=0']);
  const routes = await routesVia(i.netns, i.pod.ifname);
  const ours = routes.find((r) => r.dst === 'default' && r.gateway === PASST_FAKE_GATEWAY);
  if (ours || !routes.some((r) => r.dst === 'default')) {
    // The drop rules first: the route never exists without them.
    await ns(
      'nft',
      ['-f', '-'],
      passtEgressRuleset(i.pod.ifname, subnetOf(i.podAddr.local, i.podAddr.prefixlen)),
    );
    await ns('ip', ['route', 'replace', 'default', 'via', PASST_FAKE_GATEWAY, 'dev', i.pod.ifname, 'onlink']);
  }
  return {
    name: i.name,
    binding: 'passt',
    tap: '',
    bridge: '',
    mac: i.mac,
    guestIP: i.podAddr.local,
    prefixLength: i.podAddr.prefixlen,
    serverIP: i.podAddr.local,
    mtu: i.pod.mtu,
    dns: i.dns.nameservers,
    searchDomains: i.dns.search,
    hostname: i.hostname,
    podIP: i.podAddr.local,
    podInterface: i.pod.ifname,
  };
}
