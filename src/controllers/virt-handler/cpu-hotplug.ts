/**
 * virt-handler's part of CPU hotplug (upstream's migration target hotplugCPU): a VMI whose
 * spec asks for more sockets than its guest has carries the HotVCPUChange condition; the
 * workload updater moved it to a launcher pod sized for the new vCPUs, and once it runs
 * there the handler of that (target) node has the launcher enable them
 * (SyncVirtualMachineCPUs), then records `status.currentCPUTopology` and drops the
 * condition.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import { HOT_VCPU_CHANGE, migratedForHotplug } from '../common/hotplug-migration';

/** Whether the VMI's pending CPU hotplug is this node's to apply now (the migration for it landed here). */
export function cpuHotplugDue(vmi: VirtualMachineInstance, nodeName: string): boolean {
  return vmi.status?.nodeName === nodeName && migratedForHotplug(vmi, HOT_VCPU_CHANGE);
}

/** `next` once the guest has the spec's vCPUs: currentCPUTopology from the spec, the condition gone. */
export function withCpusHotplugged(vmi: VirtualMachineInstance, next: VirtualMachineInstance) {
  const cpu = vmi.spec.domain.cpu ?? {};
  const st = { ...(next.status ?? {}) };
  st.currentCPUTopology = { sockets: cpu.sockets, cores: cpu.cores, threads: cpu.threads };
  st.conditions = (st.conditions ?? []).filter((c) => c.type !== HOT_VCPU_CHANGE);
  return { ...next, status: st };
}
