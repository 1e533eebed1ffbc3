/**
 * What the handler's metrics scrape asks: the VMIs running on this node with a launcher to
 * ask for domain stats, read from the informer cache (each `stats()` is one launcher call).
 *
 * The VMI interface names of a guest's tap devices, for the per-interface metrics: libvirt's
 * bulk stats name a NIC by its host device (`net.0.name=tap0`) and upstream labels the
 * samples with the interface's alias instead (the VMI's interface name, `ua-` dropped),
 * so `interface="default"` on dashboards. The taps are the converter's names
 * (`tapName`): `tap0` on the pod network, a hash of the network name otherwise.
 *
 * The bounds of the per-vCPU, per-NIC and per-drive samples come from the VMI spec too
 * ({@link statsLimits}): the launcher runs next to the tenant's guest, so the counts it
 * reports are not trusted to size loops.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import { tapName } from '../../converter/configurators/interfaces';
import type { Pod } from '../common/pod';
import { STATS_CEILING, type StatsLimits } from '../metrics/domain-stats';
import type { StatsTarget } from '../metrics/handler-metrics';
import type { LauncherConnections } from './launcher-connections';

/** The stats targets among `vmis`: Running on `node`, with a launcher socket. */
export function statsTargets(
  vmis: readonly VirtualMachineInstance[],
  node: string,
  podOf: (vmi: VirtualMachineInstance) => Pod | undefined,
  conns: LauncherConnections,
): StatsTarget[] {
  const out: StatsTarget[] = [];
  for (const vmi of vmis) {
    if (vmi.status?.phase !== 'Running' || vmi.status.nodeName !== node) continue;
    const podUid = podOf(vmi)?.metadata?.uid;
    if (!podUid || !conns.socketExists(podUid)) continue;
    out.push({
      namespace: vmi.metadata?.namespace ?? 'default',
      name: vmi.metadata?.name ?? '',
      node,
      interfaces: interfaceAliases(vmi),
      limits: statsLimits(vmi),
      stats: async () => (await conns.get(podUid)).getDomainStats(),
    });
  }
  return out;
}

/** Tap device -> VMI interface name, for the VMI's interfaces on pod or multus networks. */
export function interfaceAliases(vmi: VirtualMachineInstance): Record<string, string> {
  const networks = new Map((vmi.spec?.networks ?? []).map((n) => [n.name, n]));
  const out: Record<string, string> = {};
  for (const iface of vmi.spec?.domain?.devices?.interfaces ?? []) {
    const net = networks.get(iface.name);
    if (!net || iface.sriov) continue;
    out[tapName(net.name, net.pod !== undefined)] = iface.name;
  }
  return out;
}

const positive = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : 1);

/**
 * The most vCPUs, NICs and block devices the VMI's domain can have, as the converter
 * builds it: vCPUs are max(sockets, maxSockets) x cores x threads (hotplug headroom
 * included), one NIC per interface, one drive per disk; never above {@link STATS_CEILING}.
 */
export function statsLimits(vmi: VirtualMachineInstance): StatsLimits {
  const cpu = vmi.spec?.domain?.cpu ?? {};
  const sockets = Math.max(positive(cpu.sockets), cpu.maxSockets ? positive(cpu.maxSockets) : 1);
  const devices = vmi.spec?.domain?.devices;
  return {
    vcpus: Math.min(sockets * positive(cpu.cores) * positive(cpu.threads), STATS_CEILING.vcpus),
    nets: Math.min(devices?.interfaces?.length ?? 0, STATS_CEILING.nets),
    blocks: Math.min(devices?.disks?.length ?? 0, STATS_CEILING.blocks),
  };
}
