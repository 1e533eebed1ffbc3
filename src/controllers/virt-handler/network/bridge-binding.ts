/**
 * The bridge binding on the pod network (upstream's netpod bridgeBindingSpec and
 * discoverbridge): the pod's interface and its IPv4 address move to the guest. In the pod's
 * namespace: `eth0` loses its address and becomes `eth0-nic`, a port of the in-pod bridge
 * `k6t-eth0` (with the bridge's MAC, so the guest can keep eth0's, and no MAC learning);
 * the bridge gets upstream's fake link-local address 169.254.75.10/32 (the DHCP server's
 * source); the tap `tap0` for QEMU is the other port. The DHCP server then offers the guest
 * the pod's own address, prefix, gateway (the pod's default route, if any) and MTU.
 *
 * Unlike upstream, no dummy `eth0` keeps the pod address in the pod: node's dgram cannot
 * bind the DHCP socket to the bridge (no SO_BINDTODEVICE), so the pod subnet's broadcast
 * must route out of `k6t-eth0` (a broadcast route in the local table), which a dummy
 * holding the subnet would take. A half-done setup (eth0 already renamed, no cache) is
 * reported, not repaired: the pod's address is gone from the namespace by then.
 */
import type { CachedInterface } from '../../common/network-cache';
import { runInNetns } from '../../common/run-tool';
import type { LinkInfo } from './netns-links';
import { link, routesVia } from './netns-links';

/** Names and the fake address upstream uses for the pod network's bridge binding. */
export const BRIDGE_BINDING = {
  bridge: 'k6t-eth0',
  podPort: 'eth0-nic',
  tap: 'tap0',
  /** upstream: bridgeFakeIPBase "169.254.75.1" + the interface index (only one on the pod network). */
  fakeIP: '169.254.75.10',
} as const;

/** The in-pod names of one bridge binding (the pod network's above, or a secondary network's). */
export interface BridgeNames {
  bridge: string;
  podPort: string;
  tap: string;
  fakeIP: string;
}

export interface BridgeBindingInput {
  netns: string;
  /** The pod interface before the move (eth0, or pod<hash>), and its IPv4 address if any. */
  pod: LinkInfo;
  podAddr?: { local: string; prefixlen: number };
  /** Default: the pod network's ({@link BRIDGE_BINDING}). */
  names?: BridgeNames;
  name: string;
  /** The spec's MAC (normalised); else the guest takes eth0's MAC, as upstream. */
  mac?: string;
  tapOwner?: { uid: number; gid: number };
  multiQueue: boolean;
  dns: { nameservers: string[]; search: string[] };
  hostname: string;
  subject: string;
}

/** The broadcast address of `ip`/`prefix` (IPv4). */
function broadcastOf(ip: string, prefix: number): string {
  const n = ip.split('.').reduce((a, o) => (a << 8) | Number(o), 0) >>> 0;
  const b = (n | (prefix === 0 ? 0xffffffff : (1 << (32 - prefix)) - 1)) >>> 0;
  return [24, 16, 8, 0].map((s) => (b >>> s) & 0xff).join('.');
}

/** Moves the pod's interface to the guest's bridge; returns the cache entry for the launcher. */
export async function setUpBridgeBinding(i: BridgeBindingInput): Promise<CachedInterface> {
  const ns = (cmd: string, args: string[]) => runInNetns(i.netns, cmd, args);
  const { bridge, podPort, tap, fakeIP } = i.names ?? BRIDGE_BINDING;
  const podMAC = i.pod.address;
  if (!podMAC) throw new Error(`${i.subject}: the pod's ${i.pod.ifname} has no MAC address`);
  const mtu = String(i.pod.mtu);
  // The gateway the pod used (none on local mode's pod network); read before eth0 loses its address.
  const gateway = (await routesVia(i.netns, i.pod.ifname)).find((r) => r.dst === 'default')?.gateway;

  if (!(await link(i.netns, bridge))) {
    await ns('ip', ['link', 'add', bridge, 'type', 'bridge']);
  }
  const br = await link(i.netns, bridge);
  if (!br?.address) throw new Error(`${i.subject}: bridge ${bridge} has no MAC address`);
  // Pin the bridge's MAC: otherwise it follows its ports' lowest MAC.
  await ns('ip', ['link', 'set', bridge, 'address', br.address, 'mtu', mtu]);
  await ns('ip', ['addr', 'replace', `${fakeIP}/32`, 'dev', bridge]);
  await ns('ip', ['link', 'set', bridge, 'up']);

  await ns('ip', ['addr', 'flush', 'dev', i.pod.ifname]);
  await ns('ip', ['link', 'set', i.pod.ifname, 'down']);
  await ns('ip', ['link', 'set', i.pod.ifname, 'name', podPort]);
  await ns('ip', ['link', 'set', podPort, 'address', br.address, 'master', bridge]);
  await ns('ip', ['link', 'set', podPort, 'type', 'bridge_slave', 'learning', 'off']);
  await ns('ip', ['link', 'set', podPort, 'up']);

  if (!(await link(i.netns, tap))) {
    const owner = i.tapOwner ? ['user', String(i.tapOwner.uid), 'group', String(i.tapOwner.gid)] : [];
    await ns('ip', [
      'tuntap',
      'add',
      'dev',
      tap,
      'mode',
      'tap',
      ...owner,
      ...(i.multiQueue ? ['multi_queue'] : []),
    ]);
    await ns('ip', ['link', 'set', tap, 'mtu', mtu, 'master', bridge, 'up']);
  }
  // The DHCP server replies to the pod subnet's broadcast: route it out of the bridge.
  // An interface without an address (a layer-2 secondary network) gets no DHCP.
  if (i.podAddr) await broadcastRoute(ns, broadcastOf(i.podAddr.local, i.podAddr.prefixlen), bridge, fakeIP);

  return {
    name: i.name,
    binding: 'bridge',
    tap,
    bridge,
    mac: i.mac ?? podMAC.toLowerCase(),
    guestIP: i.podAddr?.local ?? '',
    prefixLength: i.podAddr?.prefixlen ?? 0,
    ...(gateway ? { gateway } : {}),
    serverIP: fakeIP,
    mtu: i.pod.mtu,
    dns: i.dns.nameservers,
    searchDomains: i.dns.search,
    hostname: i.hostname,
    podIP: i.podAddr?.local ?? '',
    podInterface: i.pod.ifname,
  };
}

async function broadcastRoute(
  ns: (cmd: string, args: string[]) => Promise<string>,
  bcast: string,
  bridge: string,
  fakeIP: string,
): Promise<void> {
  await ns('ip', [
    'route',
    'replace',
    'broadcast',
    bcast,
    'dev',
    bridge,
    'table',
    'local',
    'scope',
    'link',
    'src',
    fakeIP,
  ]);
}
