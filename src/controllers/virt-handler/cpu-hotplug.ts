/**
 * virt-handler's part of CPU and memory hotplug (upstream's migration target hotplugCPU
 * and hotplugMemory). CPU: a VMI whose
 * spec asks for more sockets than its guest has carries the HotVCPUChange condition; the
 * workload updater moved it to a launcher pod sized for the new vCPUs, and once it runs
 * there the handler of that (target) node has the launcher enable them
 * (SyncVirtualMachineCPUs), then records `status.currentCPUTopology` and drops the
 * condition. Memory the same way with HotMemoryChange, SyncVirtualMachineMemory (the
 * virtio-mem device asks for the new size) and `status.memory.guestRequested`.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import { HOT_MEMORY_CHANGE, HOT_VCPU_CHANGE, migratedForHotplug } from '../common/hotplug-migration';

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

/** Whether the VMI's pending memory hotplug is this node's to apply now (the migration for it landed here). */
export function memoryHotplugDue(vmi: VirtualMachineInstance, nodeName: string): boolean {
  return vmi.status?.nodeName === nodeName && migratedForHotplug(vmi, HOT_MEMORY_CHANGE);
}

/** `next` once the guest was asked for the spec's memory: guestRequested from the spec, the condition gone. */
export function withMemoryHotplugged(vmi: VirtualMachineInstance, next: VirtualMachineInstance) {
  const st = { ...(next.status ?? {}) };
  st.memory = { ...(st.memory ?? {}), guestRequested: vmi.spec.domain.memory?.guest };
  st.conditions = (st.conditions ?? []).filter((c) => c.type !== HOT_MEMORY_CHANGE);
  return { ...next, status: st };
}
