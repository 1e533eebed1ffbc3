/**
 * Network setup phase 1 (upstream's virt-handler pkg/network/setup): privileged, in the
 * launcher pod's network namespace, before the launcher defines the domain. For the
 * masquerade binding on the pod network: an in-pod bridge `k6t-eth0` (10.0.2.1/24, the
 * reserved MAC, the pod interface's MTU), a tap `tap0` on it for QEMU, IPv4 forwarding,
 * and the NAT ruleset (masquerade-rules.ts). Then the cache the launcher's DHCP server
 * reads. Every step is real iproute2/nft/sysctl run with argument arrays inside the
 * namespace (nsenter --net), and idempotent: a second run changes nothing.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import {
  boundInterfaces,
  type CachedInterface,
  podNetworkInterfaces,
  readNetworkCache,
  writeNetworkCache,
} from '../../common/network-cache';
import { runInNetns } from '../../common/run-tool';
import { setUpBridgeBinding } from './bridge-binding';
import { guestMAC } from './guest-mac';
import { MASQUERADE, MASQUERADE6, masqueradeRuleset } from './masquerade-rules';
import { link } from './netns-links';
import { setUpPasst } from './passt-setup';
import { readResolvConf } from './resolv-conf';
import { setUpSecondaryNetworks, unsupportedSecondary } from './secondary-nic-setup';

/** The pod-network interface names (upstream's: the pod side `eth0`, the in-pod bridge and tap). */
export const POD_IF = 'eth0';
export const MASQUERADE_BRIDGE = 'k6t-eth0';
export const POD_TAP = 'tap0';

/** Options of {@link setUpPodNetwork}. */
export interface PodNicSetupOptions {
  /** The launcher pod's network namespace (`/run/netns/<name>` or `/proc/<pid>/ns/net`). */
  netns: string;
  /** The pod's sockets directory on the host (where the cache for the launcher goes). */
  socketDir: string;
  /**
   * The pod's resolv.conf (default /etc/resolv.conf: local mode's pods share the host's),
   * read without following symlinks when it is inside a container's root.
   */
  resolvConf?: string;
  /** Owner uid/gid of the tap, for a QEMU that opens it itself (default: root only). */
  tapOwner?: { uid: number; gid: number };
  /**
   * The launcher's account when it is not root (a kubelet's launcher pod runs as 107): the
   * cache is made its own, and ports from 67 up may be bound by it in the pod's namespace
   * (the DHCP server's port 67; a container's added capabilities do not reach a non-root
   * process, and upstream's launcher binary carries CAP_NET_BIND_SERVICE as a file
   * capability, which a Node script cannot).
   */
  launcherUser?: { uid: number; gid: number };
}

/** What of the VMI's networks this setup cannot do yet: a field-path message, or undefined. */
export function unsupportedNetwork(vmi: VirtualMachineInstance): string | undefined {
  const subject = `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name}`;
  const pod = new Set((vmi.spec.networks ?? []).filter((n) => n.pod).map((n) => n.name));
  const secondary = unsupportedSecondary(vmi);
  if (secondary) return `${subject}: ${secondary}`;
  for (const [i, iface] of (vmi.spec.domain.devices.interfaces ?? []).entries()) {
    if (iface.state === 'absent' || iface.sriov || !pod.has(iface.name)) continue;
    const path = `spec.domain.devices.interfaces[${i}]`;
    if (iface.dhcpOptions) {
      return `${subject}: ${path}.dhcpOptions: extra DHCP options are not served by this launcher's DHCP server yet`;
    }
    if (!iface.masquerade && !iface.bridge && !iface.passtBinding) {
      return `${subject}: ${path}.binding: network binding plugins are not set up on the pod network yet (masquerade, bridge and passtBinding are)`;
    }
  }
  return undefined;
}

/**
 * Sets up every interface of `vmi` on the pod network and on secondary networks and writes
 * the cache; returns it. Throws with the VMI and field path on what it cannot do.
 */
export async function setUpPodNetwork(
  vmi: VirtualMachineInstance,
  o: PodNicSetupOptions,
): Promise<CachedInterface[]> {
  const subject = `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name}`;
  const bad = unsupportedNetwork(vmi);
  if (bad) throw new Error(bad);
  const existing = await readNetworkCache(o.socketDir);
  if (existing && existing.interfaces.length === boundInterfaces(vmi).length) return existing.interfaces;
  const dns = await readResolvConf(o.resolvConf, o.resolvConf !== undefined);
  // The launcher's DHCP server binds port 67 in the pod's namespace.
  if (o.launcherUser) await allowDhcpPort(o.netns);
  const hostname = (vmi.spec.hostname ?? vmi.metadata?.name ?? 'vm').slice(0, 63);
  const primary = await setUpPrimary(vmi, o, dns, hostname);
  const secondary = await setUpSecondaryNetworks(vmi, {
    netns: o.netns,
    tapOwner: o.tapOwner,
    dns,
    hostname,
    subject,
  });
  const interfaces = [...primary, ...secondary];
  await writeNetworkCache(o.socketDir, { interfaces }, o.launcherUser);
  return interfaces;
}

/** The pod network's interface (at most one), bound as its spec says. */
async function setUpPrimary(
  vmi: VirtualMachineInstance,
  o: PodNicSetupOptions,
  dns: { nameservers: string[]; search: string[] },
  hostname: string,
): Promise<CachedInterface[]> {
  const subject = `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name}`;
  const ifaces = podNetworkInterfaces(vmi);
  if (ifaces.length === 0) return [];
  if (ifaces.length > 1)
    throw new Error(`${subject}: spec.domain.devices.interfaces: only one interface may use the pod network`);
  const { iface, index } = ifaces[0];
  const path = `spec.domain.devices.interfaces[${index}]`;
  const pod = await link(o.netns, POD_IF);
  const podAddr = pod?.addr_info?.find((a) => a.family === 'inet');
  if (!pod || !podAddr)
    throw new Error(
      `${subject}: the launcher pod's namespace ${o.netns} has no ${POD_IF} with an IPv4 address`,
    );
  if (iface.passtBinding) {
    const mac = guestMAC(iface.macAddress, vmi.metadata?.uid ?? '', iface.name, path);
    return [await setUpPasst({ netns: o.netns, pod, podAddr, name: iface.name, mac, dns, hostname })];
  }
  if (iface.bridge) {
    const cached = await setUpBridgeBinding({
      netns: o.netns,
      pod,
      podAddr,
      name: iface.name,
      mac: iface.macAddress ? guestMAC(iface.macAddress, '', iface.name, path) : undefined,
      tapOwner: o.tapOwner,
      multiQueue: vmi.spec.domain.devices.networkInterfaceMultiqueue === true,
      dns,
      hostname,
      subject: `${subject}: ${path}`,
    });
    return [cached];
  }
  const mtu = pod.mtu;
  const ns = (cmd: string, args: string[], input?: string) => runInNetns(o.netns, cmd, args, input);

  if (!(await link(o.netns, MASQUERADE_BRIDGE))) {
    await ns('ip', ['link', 'add', MASQUERADE_BRIDGE, 'type', 'bridge']);
    await ns('ip', ['link', 'set', MASQUERADE_BRIDGE, 'address', MASQUERADE.bridgeMAC, 'mtu', String(mtu)]);
    await ns('ip', [
      'addr',
      'add',
      `${MASQUERADE.gatewayIP}/${MASQUERADE.prefixLength}`,
      'dev',
      MASQUERADE_BRIDGE,
    ]);
    await ns('ip', ['link', 'set', MASQUERADE_BRIDGE, 'up']);
  }
  if (!(await link(o.netns, POD_TAP))) {
    const owner = o.tapOwner ? ['user', String(o.tapOwner.uid), 'group', String(o.tapOwner.gid)] : [];
    const multiQueue = vmi.spec.domain.devices.networkInterfaceMultiqueue ? ['multi_queue'] : [];
    await ns('ip', ['tuntap', 'add', 'dev', POD_TAP, 'mode', 'tap', ...owner, ...multiQueue]);
    await ns('ip', ['link', 'set', POD_TAP, 'mtu', String(mtu), 'master', MASQUERADE_BRIDGE, 'up']);
  }
  // The NAT ruleset of one address family (the same rules in `ip` and `ip6` tables).
  const nat = (family: 'ip' | 'ip6') =>
    ns(
      'nft',
      ['-f', '-'],
      masqueradeRuleset({
        podIf: POD_IF,
        bridge: MASQUERADE_BRIDGE,
        ports: iface.ports,
        subject: `${subject}: ${path}`,
        ...(family === 'ip6' ? { family } : {}),
      }),
    );
  await ns('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
  await nat('ip');

  // IPv6 as upstream when the pod has a global IPv6 address: fd10:0:2::1/120 on the bridge
  // for the guest's fd10:0:2::2, forwarding and the same NAT in an ip6 table. Not offered
  // by DHCPv6 or router advertisements here: the guest is configured for it (static).
  const podAddr6 = pod.addr_info?.find((a) => a.family === 'inet6' && a.scope === 'global');
  if (podAddr6) {
    await ns('ip', [
      '-6',
      'addr',
      'replace',
      `${MASQUERADE6.gatewayIP}/${MASQUERADE6.prefixLength}`,
      'dev',
      MASQUERADE_BRIDGE,
      'nodad',
    ]);
    await ns('sysctl', ['-q', '-w', 'net.ipv6.conf.all.forwarding=1']);
    await nat('ip6');
  }

  const cached: CachedInterface = {
    ...(podAddr6
      ? {
          ipv6: {
            guestIP: MASQUERADE6.guestIP,
            prefixLength: MASQUERADE6.prefixLength,
            gateway: MASQUERADE6.gatewayIP,
            podIP: podAddr6.local,
          },
        }
      : {}),
    name: iface.name,
    binding: 'masquerade',
    tap: POD_TAP,
    bridge: MASQUERADE_BRIDGE,
    mac: guestMAC(iface.macAddress, vmi.metadata?.uid ?? '', iface.name, path),
    guestIP: MASQUERADE.guestIP,
    prefixLength: MASQUERADE.prefixLength,
    gateway: MASQUERADE.gatewayIP,
    serverIP: MASQUERADE.gatewayIP,
    mtu,
    dns: dns.nameservers,
    searchDomains: dns.search,
    hostname,
    podIP: podAddr.local,
    podInterface: POD_IF,
  };
  return [cached];
}

/** The first port the pod's namespace lets any account bind: 67, DHCP's, where it is higher. */
async function allowDhcpPort(netns: string): Promise<void> {
  const key = 'net.ipv4.ip_unprivileged_port_start';
  const now = Number((await runInNetns(netns, 'sysctl', ['-n', key])).trim());
  if (!(now <= 67)) await runInNetns(netns, 'sysctl', ['-q', '-w', `${key}=67`]);
}
