/**
 * The `LiveMigratable` condition and migration method, as upstream's virt-handler
 * calculates them (vm.go calculateLiveMigrationCondition, checkVolumesForMigration): the
 * first reason the VMI cannot move, in upstream's order and words, else True; and whether
 * its local disks (containerDisk, emptyDisk, ...) must be copied with it (block migration).
 */
import type { VirtualMachineInstance, VirtualMachineInstanceCondition } from '../../api/generated/types';
import { networkNotMigratable } from './network/live-migratable';

/** The condition and whether a migration copies the VMI's local disks. */
export interface LiveMigrationCalculation {
  condition: VirtualMachineInstanceCondition;
  blockMigration: boolean;
}

const notMigratable = (reason: string, message: string): VirtualMachineInstanceCondition => ({
  type: 'LiveMigratable',
  status: 'False',
  reason,
  message,
});

const SHARED = new Set(['ReadWriteMany']);

/**
 * Volumes: a claim must be shared (ReadWriteMany, from `status.volumeStatus`), a host disk
 * must be marked shared; read-only disks stay; any other local volume is block-migrated.
 */
function volumesForMigration(vmi: VirtualMachineInstance): { block: boolean; error?: string } {
  const statusOf = new Map((vmi.status?.volumeStatus ?? []).map((s) => [s.name, s]));
  // Upstream's isReadOnlyDisk: a CD-ROM, read-only unless it says otherwise.
  const readOnly = new Set(
    (vmi.spec.domain.devices?.disks ?? [])
      .filter((d) => d.cdrom !== undefined && d.cdrom.readonly !== false)
      .map((d) => d.name),
  );
  const filesystems = new Set((vmi.spec.domain.devices?.filesystems ?? []).map((f) => f.name));
  let block = false;
  for (const v of vmi.spec.volumes ?? []) {
    const claim = v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name;
    const info = statusOf.get(v.name)?.persistentVolumeClaimInfo;
    if (claim !== undefined) {
      if (!info)
        return {
          block: true,
          error: `cannot migrate VMI: Unable to determine if PVC ${claim} is shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)`,
        };
      if (!(info.accessModes ?? []).some((m) => SHARED.has(m)))
        return {
          block: true,
          error: `cannot migrate VMI: PVC ${claim} is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)`,
        };
    } else if (v.hostDisk) {
      if (!v.hostDisk.shared) return { block: true, error: 'cannot migrate VMI with non-shared HostDisk' };
    } else if (!filesystems.has(v.name) && !readOnly.has(v.name)) {
      block = true;
    }
  }
  return { block };
}

/** Upstream's LiveMigratable condition for `vmi`, and whether it block-migrates. */
export function liveMigrationCondition(vmi: VirtualMachineInstance): LiveMigrationCalculation {
  const volumes = volumesForMigration(vmi);
  const blockMigration = volumes.block;
  const no = (reason: string, message: string) => ({
    condition: notMigratable(reason, message),
    blockMigration,
  });
  const network = networkNotMigratable(vmi);
  if (network) return { condition: network, blockMigration };
  const devices = vmi.spec.domain.devices ?? {};
  if ((devices.hostDevices ?? []).length > 0)
    return no('HostDeviceNotLiveMigratable', 'VMI specifies non-migratable generic PCI host device');
  if ((devices.gpus ?? []).length > 1)
    return no('HostDeviceNotLiveMigratable', 'VMI specifies too many GPUs');
  if (vmi.spec.domain.launchSecurity?.sev) return no('SEVNotLiveMigratable', 'VMI uses SEV');
  if (vmi.spec.domain.features?.hypervPassthrough?.enabled)
    return no('HypervPassthroughNotLiveMigratable', 'VMI uses hyperv passthrough');
  if (volumes.error) return no('DisksNotLiveMigratable', volumes.error);
  // The target pod would need its own attachment pods and mounts: not built (docs/storage.md).
  if (
    (vmi.spec.volumes ?? []).some((v) => v.persistentVolumeClaim?.hotpluggable || v.dataVolume?.hotpluggable)
  )
    return no('HotplugNotLiveMigratable', 'VMI has hotplugged volumes: migrating them is not implemented');
  return { condition: { type: 'LiveMigratable', status: 'True' }, blockMigration };
}
