/**
 * Hotplug volume rules (upstream's storage hotplug admitter, ValidateHotplugDiskConfiguration),
 * narrowed to what kubevirt-ts attaches live: a hotpluggable PVC or DataVolume volume shown
 * as a `disk` on the virtio or scsi bus (or a scsi `lun`), without a boot order, on a VMI
 * whose hotplug is not disabled, with a hotplug feature gate on; or the media of a `cdrom`
 * drive (inserted and ejected live).
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec } from '../generated/types';

const HOTPLUG_BUSES = ['virtio', 'scsi'];

/** Errors for the spec's hotpluggable volumes and their disks. */
export function validateHotplugVolumes(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  const disks = spec.domain.devices.disks ?? [];
  const disksPath = field.child('domain', 'devices', 'disks');
  (spec.volumes ?? []).forEach((v, vi) => {
    const flag = v.dataVolume?.hotpluggable
      ? field.child('volumes').index(vi).child('dataVolume', 'hotpluggable')
      : v.persistentVolumeClaim?.hotpluggable
        ? field.child('volumes').index(vi).child('persistentVolumeClaim', 'hotpluggable')
        : undefined;
    if (!flag) return;
    if (
      !config.isFeatureGateEnabled(FeatureGate.DeclarativeHotplugVolumes) &&
      !config.isFeatureGateEnabled(FeatureGate.HotplugVolumes)
    )
      errs.push(
        fieldError(flag, `${flag}: enable the DeclarativeHotplugVolumes or HotplugVolumes feature gate`),
      );
    if (spec.domain.devices.disableHotplug)
      errs.push(fieldError(flag, `${flag}: spec.domain.devices.disableHotplug is true`));
    const di = disks.findIndex((d) => d.name === v.name);
    if (di < 0) return;
    const d = disks[di]!;
    const p = disksPath.index(di);
    // A CD-ROM's media (upstream's DeclarativeHotplugVolumes): the drive's bus rules are the
    // CD-ROM's own (vmi-disks.ts), and the drive stays when the media goes.
    if (d.cdrom) return;
    const bus = (d.lun ?? d.disk)?.bus;
    const busPath = p.child(d.lun ? 'lun' : 'disk', 'bus');
    if (bus && !HOTPLUG_BUSES.includes(bus))
      errs.push(
        fieldError(
          busPath,
          `hotplugged Disk ${d.name} does not use a scsi or virtio bus (${busPath}: ${bus})`,
        ),
      );
    if (d.lun && bus !== 'scsi')
      errs.push(fieldError(busPath, `${busPath}: a hotplugged LUN needs the scsi bus`));
    if (d.bootOrder !== undefined)
      errs.push(fieldError(p.child('bootOrder'), `Hotplugged disk ${d.name} can't define a boot order`));
  });
  return errs;
}
