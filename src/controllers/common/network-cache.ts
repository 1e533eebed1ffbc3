/**
 * What the node agent's network setup (phase 1, privileged, in the pod's network
 * namespace) hands the launcher (phase 2: DHCP server, domain): one entry per pod-network
 * interface, as upstream's interface cache files in the launcher pod. Written as
 * `network-cache.json` in the pod's sockets directory, which both reach.
 */
import { chown, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Interface, VirtualMachineInstance } from '../../api/generated/types';

export const NETWORK_CACHE_FILE = 'network-cache.json';

/** One guest interface the setup prepared. */
export interface CachedInterface {
  /** The VMI interface (and network) name. */
  name: string;
  binding: 'masquerade' | 'bridge' | 'passt';
  /** The tap in the pod's namespace the domain's interface uses (none for passt: a socket). */
  tap: string;
  /** The in-pod bridge the tap is a port of. */
  bridge: string;
  /** The guest's MAC (the spec's, else generated and stable for the VMI). */
  mac: string;
  /** What the DHCP server offers the guest. */
  guestIP: string;
  prefixLength: number;
  /** Router offered to the guest (absent: none, e.g. bridge binding without a pod gateway). */
  gateway?: string;
  /** The DHCP server's address on the in-pod bridge (its source address). */
  serverIP: string;
  mtu: number;
  dns: string[];
  searchDomains: string[];
  hostname: string;
  /** The pod's own address on this network (status reports it for masquerade); '' when it has none. */
  podIP: string;
  /** Masquerade on a pod with IPv6: the guest's address (fd10:0:2::2/120), its gateway and the pod's IPv6. */
  ipv6?: { guestIP: string; prefixLength: number; gateway: string; podIP: string };
  /** The pod interface it is bound to (`eth0`, or `pod<hash>` for a secondary network). */
  podInterface?: string;
}

export interface NetworkCache {
  interfaces: CachedInterface[];
}

/**
 * Writes the cache (mode 0600), owned by `owner` when given: the launcher's account, so a
 * non-root launcher (107) reads what the root node agent wrote.
 */
export async function writeNetworkCache(
  socketDir: string,
  cache: NetworkCache,
  owner?: { uid: number; gid: number },
): Promise<void> {
  const file = join(socketDir, NETWORK_CACHE_FILE);
  await writeFile(`${file}.tmp`, JSON.stringify(cache), { mode: 0o600 });
  if (owner) await chown(`${file}.tmp`, owner.uid, owner.gid);
  await rename(`${file}.tmp`, file);
}

export async function readNetworkCache(socketDir: string): Promise<NetworkCache | undefined> {
  try {
    return JSON.parse(await readFile(join(socketDir, NETWORK_CACHE_FILE), 'utf8')) as NetworkCache;
  } catch {
    return undefined;
  }
}

/** The VMI's interfaces on the pod network, with their index (the field path). */
export function podNetworkInterfaces(vmi: VirtualMachineInstance): { iface: Interface; index: number }[] {
  const pod = new Set((vmi.spec.networks ?? []).filter((n) => n.pod).map((n) => n.name));
  return (vmi.spec.domain.devices.interfaces ?? [])
    .map((iface, index) => ({ iface, index }))
    .filter(({ iface }) => pod.has(iface.name) && iface.state !== 'absent' && !iface.sriov);
}

/**
 * Every interface the node's network setup binds: those on the pod network and those on
 * secondary multus networks (SR-IOV and absent ones excluded), with their index.
 */
export function boundInterfaces(vmi: VirtualMachineInstance): { iface: Interface; index: number }[] {
  const bound = new Set(
    (vmi.spec.networks ?? []).filter((n) => n.pod || (n.multus && !n.multus.default)).map((n) => n.name),
  );
  return (vmi.spec.domain.devices.interfaces ?? [])
    .map((iface, index) => ({ iface, index }))
    .filter(({ iface }) => bound.has(iface.name) && iface.state !== 'absent' && !iface.sriov);
}
