/**
 * Which migration carries a CPU, memory or NIC hotplug (shared by virt-controller's workload
 * updater and virt-handler): the VMI's last migration, when it succeeded into the node the
 * VMI runs on and started no earlier than the hotplug condition appeared (an older one
 * left the guest in a pod sized for the old resources). Timestamps are to the second,
 * hence the second's slack.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';

/** The VMI condition of a pending CPU hotplug (upstream's VirtualMachineInstanceVCPUChange). */
export const HOT_VCPU_CHANGE = 'HotVCPUChange';
/** The VMI condition of a pending memory hotplug (upstream's VirtualMachineInstanceMemoryChange). */
export const HOT_MEMORY_CHANGE = 'HotMemoryChange';
/** The VMI condition of a launcher pod that cannot carry the VMI's NICs (upstream's VirtualMachineInstanceMigrationRequired). */
export const MIGRATION_REQUIRED = 'MigrationRequired';
/** Its reason (upstream's VirtualMachineInstanceReasonAutoMigrationDueToLiveUpdate). */
export const AUTO_MIGRATION_DUE_TO_LIVE_UPDATE = 'AutoMigrationDueToLiveUpdate';

/** Whether the VMI's last migration brought it to a pod made for its pending `condition`. */
export function migratedForHotplug(vmi: VirtualMachineInstance, condition: string): boolean {
  const st = vmi.status;
  const cond = st?.conditions?.find((c) => c.type === condition);
  const ms = st?.migrationState;
  if (!cond || !ms?.completed || ms.failed || !ms.targetNode || ms.targetNode !== st?.nodeName) return false;
  if (!cond.lastTransitionTime || !ms.startTimestamp) return true;
  return Date.parse(String(ms.startTimestamp)) >= Date.parse(String(cond.lastTransitionTime)) - 1000;
}
