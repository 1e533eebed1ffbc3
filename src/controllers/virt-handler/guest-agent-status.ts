/**
 * The guest-agent part of the VMI status virt-handler writes, from what the launcher
 * reports (pure, as upstream's virt-handler does it):
 * - the `AgentConnected` condition: True while the agent's channel is connected, removed
 *   otherwise;
 * - `status.guestOSInfo` from the agent's OS info (kept when the agent goes away, as
 *   upstream keeps the last one it saw);
 * - `status.interfaces`: one entry per spec interface (`infoSource: domain`), merged by
 *   MAC with the agent's interfaces (interfaceName, ipAddress, ipAddresses; `infoSource:
 *   domain, guest-agent`); agent interfaces that match none are appended with
 *   `infoSource: guest-agent`. The loopback interface is left out, as upstream's launcher
 *   leaves it out (its 127.0.0.1 would show as the VMI's IP).
 */
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceCondition,
  VirtualMachineInstanceGuestOSInfo,
  VirtualMachineInstanceNetworkInterface,
  VirtualMachineInstanceSpec,
} from '../../api/generated/types';
import type { GuestInterface } from '../../drivers/guest-agent';
import { isSecondaryMultus } from '../common/multus';
import type { LauncherInterface } from '../launcher-protocol/domain-report';
import type { LauncherGuestAgent } from '../launcher-protocol/guest-agent-report';

/** Upstream's condition type for a connected guest agent. */
export const AGENT_CONNECTED = 'AgentConnected';
/** Upstream's `infoSource` values. */
export const INFO_SOURCE_DOMAIN = 'domain';
export const INFO_SOURCE_GUEST_AGENT = 'guest-agent';
export const INFO_SOURCE_DOMAIN_AND_GA = 'domain, guest-agent';

type Condition = VirtualMachineInstanceCondition;
type Status = NonNullable<VirtualMachineInstance['status']>;

/** Conditions with AgentConnected set (True, kept as it was if already True) or removed. */
export function agentConditions(
  conds: Condition[],
  agent: LauncherGuestAgent | undefined,
  now: string,
): Condition[] {
  const connected = agent?.connected === true;
  const has = conds.some((c) => c.type === AGENT_CONNECTED && c.status === 'True');
  if (connected && has) return conds;
  const rest = conds.filter((c) => c.type !== AGENT_CONNECTED);
  if (!connected) return rest;
  return [
    ...rest,
    {
      type: AGENT_CONNECTED,
      status: 'True',
      lastProbeTime: null as unknown as string,
      lastTransitionTime: now,
    },
  ];
}

/** The guest OS info to write: the agent's when it reported one, else what is there. */
export function guestOSInfoOf(
  current: VirtualMachineInstanceGuestOSInfo | undefined,
  agent: LauncherGuestAgent | undefined,
): VirtualMachineInstanceGuestOSInfo {
  const os = agent?.os;
  if (!os || Object.keys(os).length === 0) return current ?? {};
  const out: VirtualMachineInstanceGuestOSInfo = {};
  for (const k of [
    'id',
    'kernelRelease',
    'kernelVersion',
    'machine',
    'name',
    'prettyName',
    'version',
    'versionId',
  ] as const) {
    if (os[k] !== undefined) out[k] = os[k];
  }
  return out;
}

const normMac = (m: string | undefined) => m?.replaceAll('-', ':').toLowerCase();

function ips(i: GuestInterface): { ipAddress?: string; ipAddresses?: string[] } {
  const all = i.ipAddresses.map((a) => a.address);
  if (all.length === 0) return {};
  // Upstream prefers the first IPv4 address as the interface's main IP.
  const main = i.ipAddresses.find((a) => a.type === 'ipv4')?.address ?? all[0];
  return { ipAddress: main, ipAddresses: all };
}

/**
 * `status.interfaces` for the spec's interfaces and the agent's report. `secondary`: the
 * interfaces on secondary networks the domain has (NIC hotplug), when the launcher said:
 * those are listed, absent or not, and the others on secondary networks are not (a
 * hotplugged NIC not plugged yet, an unplugged one gone), as upstream's domain info source.
 */
export function interfacesOf(
  spec: VirtualMachineInstanceSpec | undefined,
  agent: LauncherGuestAgent | undefined,
  network: LauncherInterface[] = [],
  secondary?: string[],
): VirtualMachineInstanceNetworkInterface[] {
  const out: VirtualMachineInstanceNetworkInterface[] = [];
  // Masquerade interfaces whose address is the pod's (upstream reports the pod IP for them).
  const podIPs = new Map<VirtualMachineInstanceNetworkInterface, string[]>();
  const onSecondary = new Set((spec?.networks ?? []).filter(isSecondaryMultus).map((n) => n.name));
  for (const iface of spec?.domain?.devices?.interfaces ?? []) {
    const tracked = secondary !== undefined && onSecondary.has(iface.name) && !iface.sriov;
    if (tracked ? !secondary.includes(iface.name) : iface.state === 'absent') continue;
    const entry: VirtualMachineInstanceNetworkInterface = {
      name: iface.name,
      infoSource: INFO_SOURCE_DOMAIN,
    };
    const net = network.find((n) => n.name === iface.name);
    const mac = normMac(iface.macAddress) ?? net?.mac;
    if (mac) entry.mac = mac;
    if (net?.podInterface) entry.podInterfaceName = net.podInterface;
    if (net?.binding === 'masquerade' || net?.binding === 'passt') {
      // upstream lists the pod's IPv6 address after its IPv4 one.
      const addrs = [net.podIP, ...(net.podIPv6 ? [net.podIPv6] : [])];
      podIPs.set(entry, addrs);
      Object.assign(entry, { ipAddress: net.podIP, ipAddresses: addrs });
    } else if (net?.leasedIP) {
      // Without a guest agent, the address the DHCP server gave the guest.
      Object.assign(entry, { ipAddress: net.leasedIP, ipAddresses: [net.leasedIP] });
    }
    out.push(entry);
  }
  const guest = agent?.connected ? (agent.interfaces ?? []) : [];
  for (const gi of guest) {
    if (gi.name === 'lo') continue;
    const mac = normMac(gi.mac);
    const match = mac ? out.find((o) => o.mac === mac && o.infoSource === INFO_SOURCE_DOMAIN) : undefined;
    if (match) {
      const podIP = podIPs.get(match);
      const addresses = podIP ? { ipAddress: podIP[0], ipAddresses: podIP } : ips(gi);
      Object.assign(match, { interfaceName: gi.name, ...addresses, infoSource: INFO_SOURCE_DOMAIN_AND_GA });
    } else {
      out.push({
        interfaceName: gi.name,
        ...(mac ? { mac } : {}),
        ...ips(gi),
        infoSource: INFO_SOURCE_GUEST_AGENT,
      });
    }
  }
  return out;
}

/** Sets the guest-agent fields of a running VMI's status (a copy the caller owns). */
export function applyGuestAgentStatus(
  st: Status,
  spec: VirtualMachineInstanceSpec | undefined,
  agent: LauncherGuestAgent | undefined,
  now: string,
  network?: LauncherInterface[],
  secondary?: string[],
): void {
  st.conditions = agentConditions(st.conditions ?? [], agent, now);
  st.guestOSInfo = guestOSInfoOf(st.guestOSInfo, agent);
  st.interfaces = interfacesOf(spec, agent, network, secondary);
}
