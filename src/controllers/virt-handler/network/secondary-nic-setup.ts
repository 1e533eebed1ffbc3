/**
 * Phase 1 for secondary (multus) networks: each is bound with the bridge binding, as
 * upstream binds them (masquerade and passt are pod-network only; admission refuses them
 * here). The pod interface Multus (or local mode's pod runtime) attached as `pod<hash>`
 * becomes `<hash>-nic`, a port of the in-pod bridge `k6t-<hash>`, with the tap
 * `tap<hash>` for QEMU and upstream's fake address 169.254.75.1<interface index> on the
 * bridge; the interface's IPv4 address, if its IPAM gave one, is offered to the guest by
 * the launcher's DHCP server. Already set-up interfaces are left alone (idempotent).
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { secondaryLinkNames, secondaryNetworks } from '../../common/multus';
import type { CachedInterface } from '../../common/network-cache';
import { setUpBridgeBinding } from './bridge-binding';
import { guestMAC } from './guest-mac';
import { link } from './netns-links';

/** Inputs shared with the pod network's setup. */
export interface SecondarySetupInput {
  netns: string;
  tapOwner?: { uid: number; gid: number };
  dns: { nameservers: string[]; search: string[] };
  hostname: string;
  subject: string;
}

/** What of a secondary network's interface this node cannot bind, with its field path. */
export function unsupportedSecondary(vmi: VirtualMachineInstance): string | undefined {
  for (const { iface, index } of secondaryNetworks(vmi)) {
    if (!iface || iface.state === 'absent' || iface.sriov) continue;
    const path = `spec.domain.devices.interfaces[${index}]`;
    if (!iface.bridge) {
      return `${path}: only the bridge binding is set up on a secondary (multus) network (masquerade and passt are pod-network only)`;
    }
  }
  return undefined;
}

/** Binds every secondary network's interface; returns their cache entries in spec order. */
export async function setUpSecondaryNetworks(
  vmi: VirtualMachineInstance,
  i: SecondarySetupInput,
): Promise<CachedInterface[]> {
  const out: CachedInterface[] = [];
  for (const { network, iface, index } of secondaryNetworks(vmi)) {
    if (!iface || iface.state === 'absent' || iface.sriov) continue;
    const path = `spec.domain.devices.interfaces[${index}]`;
    // upstream's fake address is "169.254.75.1" followed by the index: two digits at most.
    if (index > 99)
      throw new Error(`${i.subject}: ${path}: more than 100 interfaces cannot take a bridge's address`);
    const names = secondaryLinkNames(network.name);
    const pod = await link(i.netns, names.podIf);
    if (!pod) {
      throw new Error(
        `${i.subject}: ${path}: the launcher pod has no interface ${names.podIf} for network ${network.name} (${network.multus?.networkName}); was it attached?`,
      );
    }
    const podAddr = pod.addr_info?.find((a) => a.family === 'inet');
    out.push(
      await setUpBridgeBinding({
        netns: i.netns,
        pod,
        ...(podAddr ? { podAddr } : {}),
        names: {
          bridge: names.bridge,
          podPort: names.podPort,
          tap: names.tap,
          fakeIP: `169.254.75.1${index}`,
        },
        name: iface.name,
        mac: iface.macAddress ? guestMAC(iface.macAddress, '', iface.name, path) : undefined,
        tapOwner: i.tapOwner,
        multiQueue: vmi.spec.domain.devices.networkInterfaceMultiqueue === true,
        dns: i.dns,
        hostname: i.hostname,
        subject: `${i.subject}: ${path}`,
      }),
    );
  }
  return out;
}
