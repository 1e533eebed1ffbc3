/**
 * NIC hotplug and unplug under the LiveUpdate rollout strategy (upstream's
 * pkg/network/controllers/vm.go: applyDynamicIfaceRequestOnVMI, clearDetachedIfacesFromVMI):
 * a bridge interface on a secondary (multus) network added to a running VM's template is
 * appended, with its network, to the VMI; `state: absent` on such an interface is copied
 * onto the VMI's; an absent interface leaves the VMI's spec once its status entry is gone
 * (the domain no longer has it). The VMI controller then says whether the launcher pod
 * needs replacing (MigrationRequired, ../vmi/network-migration) and the node's launcher
 * plugs or unplugs the domain's NIC.
 *
 * Refused with a restart and the reason (upstream leaves these to the generic restart
 * comparison or, for SR-IOV, hotplugs them through a migration with the VF): SR-IOV
 * interfaces, other bindings, interfaces on the pod network, and a plug into a VMI that
 * cannot migrate (the pod gets the new interface only by a migration here).
 */
import type {
  Interface,
  Network,
  VirtualMachineInstance,
  VirtualMachineInstanceSpec,
} from '../../../api/generated/types';
import { isSecondaryMultus } from '../../common/multus';
import type { JsonPatchOp } from '../../runtime/types';

/** What a change of the template's interfaces means for the running VMI. */
export interface InterfaceChange {
  /** It needs a restart, for this reason. */
  restart?: string;
  /** It cannot be applied yet (and is looked at again), for this reason. */
  wait?: string;
  /** The JSON patch that applies it to the VMI. */
  patch?: JsonPatchOp[];
}

const byName = <T extends { name: string }>(list: T[] | undefined) =>
  new Map((list ?? []).map((x) => [x.name, x]));

/** Whether `iface` on `network` is one this controller plugs live: bridge binding, secondary multus. */
const pluggable = (iface: Interface, network: Network | undefined) =>
  !!iface.bridge && !!network && isSecondaryMultus(network);

/**
 * The interface part of bringing the running `vmi` to `wanted` (the VMI the template would
 * start now, defaulted): nothing, a restart, a wait, or the patch of the VMI's interfaces
 * and networks.
 */
export function interfaceChange(
  wanted: VirtualMachineInstance,
  vmi: VirtualMachineInstance,
): InterfaceChange {
  const have = vmi.spec.domain.devices.interfaces ?? [];
  const haveNets = vmi.spec.networks ?? [];
  const vmiIfaces = byName(have);
  const wantedNets = byName(wanted.spec.networks);
  const ifaces = have.map((i) => ({ ...i }));
  const nets = [...haveNets];
  let plugs = false;
  for (const [index, iface] of (wanted.spec.domain.devices.interfaces ?? []).entries()) {
    const current = vmiIfaces.get(iface.name);
    const path = `spec.template.spec.domain.devices.interfaces[${index}]`;
    if (!current) {
      if (iface.state === 'absent') continue;
      const network = wantedNets.get(iface.name);
      if (iface.sriov)
        return {
          restart: `${path}: hotplugging an SR-IOV interface (${iface.name}) is not supported; it is added at the next start`,
        };
      if (!pluggable(iface, network))
        return {
          restart: `${path}: only a bridge interface on a secondary (multus) network can be hotplugged; ${iface.name} is added at the next start`,
        };
      ifaces.push(iface);
      if (network && !nets.some((n) => n.name === network.name)) nets.push(network);
      plugs = true;
    } else if (iface.state === 'absent' && current.state !== 'absent') {
      // The rest of the interface is compared by the restart rule; absent is for the
      // bridge binding off the default network (admission).
      const i = ifaces.findIndex((x) => x.name === iface.name);
      ifaces[i] = { ...ifaces[i], state: 'absent' };
    }
  }
  // Unplugged interfaces leave the spec once the domain no longer has them (their status entry went).
  const inStatus = new Set((vmi.status?.interfaces ?? []).map((s) => s.name));
  const kept = ifaces.filter((i) => i.state !== 'absent' || inStatus.has(i.name ?? ''));
  const keptNames = new Set(kept.map((i) => i.name));
  const keptNets = nets.filter((n) => keptNames.has(n.name));
  if (JSON.stringify(kept) === JSON.stringify(have) && JSON.stringify(keptNets) === JSON.stringify(haveNets))
    return {};
  if (plugs) {
    const conds = vmi.status?.conditions ?? [];
    const migratable = conds.find((c) => c.type === 'LiveMigratable');
    if (migratable?.status === 'False')
      return {
        restart: `NIC hotplug needs a live migration (the launcher pod cannot get an interface while it runs) and the VMI is not live-migratable: ${migratable.message ?? migratable.reason ?? ''}`,
      };
    if (migratable?.status !== 'True')
      return { wait: "the VMI's LiveMigratable condition is not reported yet" };
  }
  // A list the VMI does not have yet cannot be tested: it is added.
  const test = (path: string, present: boolean, value: unknown): JsonPatchOp[] =>
    present ? [{ op: 'test', path, value }] : [];
  return {
    patch: [
      ...test('/spec/networks', vmi.spec.networks !== undefined, haveNets),
      { op: 'add', path: '/spec/networks', value: keptNets },
      ...test('/spec/domain/devices/interfaces', vmi.spec.domain.devices.interfaces !== undefined, have),
      { op: 'add', path: '/spec/domain/devices/interfaces', value: kept },
    ],
  };
}

/**
 * `wanted` and `vmi`'s specs without the interfaces (and their networks) that NIC hotplug
 * carries, for the comparison that decides a restart: those only one side has and those
 * absent on either side, when they are bridge interfaces on secondary multus networks.
 */
export function withoutHotplugInterfaces(
  wanted: VirtualMachineInstanceSpec,
  vmi: VirtualMachineInstanceSpec,
): [VirtualMachineInstanceSpec, VirtualMachineInstanceSpec] {
  const w = byName(wanted.domain.devices.interfaces);
  const v = byName(vmi.domain.devices.interfaces);
  const nets = new Map([...byName(vmi.networks), ...byName(wanted.networks)]);
  const live = new Set<string>();
  for (const name of new Set([...w.keys(), ...v.keys()])) {
    const a = w.get(name);
    const b = v.get(name);
    const iface = a ?? b;
    if (!iface || !pluggable(iface, nets.get(name))) continue;
    if (!a || !b || a.state === 'absent' || b.state === 'absent') live.add(name);
  }
  if (live.size === 0) return [wanted, vmi];
  const strip = (s: VirtualMachineInstanceSpec): VirtualMachineInstanceSpec => ({
    ...s,
    networks: (s.networks ?? []).filter((n) => !live.has(n.name)),
    domain: {
      ...s.domain,
      devices: {
        ...s.domain.devices,
        interfaces: (s.domain.devices.interfaces ?? []).filter((i) => !live.has(i.name)),
      },
    },
  });
  return [strip(wanted), strip(vmi)];
}
