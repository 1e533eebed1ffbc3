/**
 * Whether a VMI is mid-migration, as upstream's `migrations.IsMigrating`: its migration
 * state has a start and neither an end nor completion. The controllers that must leave a
 * migrating VMI alone (its conditions, hotplug, placement, the workload updater) share it.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';

/** Whether `vmi` has a migration started and not yet ended. */
export function isMigrating(vmi: VirtualMachineInstance): boolean {
  const ms = vmi.status?.migrationState;
  return !!ms?.startTimestamp && !ms.endTimestamp && !ms.completed;
}
