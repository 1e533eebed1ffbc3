/**
 * Declarative volume hotplug (upstream pkg/storage/hotplug HandleDeclarativeVolumes): the
 * hotpluggable PVC and DataVolume volumes of a VM's template are carried to its running
 * VMI, and the VMI's hotpluggable volumes the template no longer has (or has changed) are
 * taken out, each with its disk, by one JSON patch that tests the lists it replaces. A
 * CD-ROM's drive is not: a volume for it inserts media, its removal ejects it.
 */
import type {
  Disk,
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceSpec,
  Volume,
} from '../../../api/generated/types';
import { sameJson } from '../../runtime/same-json';

/** upstream IsDeclarativeHotplugVolume: a hotpluggable DataVolume or PVC volume. */
export const isHotplugVolume = (v: Volume): boolean =>
  !!(v.dataVolume?.hotpluggable || v.persistentVolumeClaim?.hotpluggable);

/**
 * The spec without its hotpluggable volumes and their disks (a CD-ROM's drive stays: only
 * its media comes and goes), and without a memory dump volume (what a restart would need
 * to change).
 */
export function withoutHotplugVolumes(spec: VirtualMachineInstanceSpec): VirtualMachineInstanceSpec {
  const hot = new Set(
    (spec.volumes ?? []).filter((v) => isHotplugVolume(v) || v.memoryDump).map((v) => v.name),
  );
  if (hot.size === 0) return spec;
  return {
    ...spec,
    volumes: (spec.volumes ?? []).filter((v) => !hot.has(v.name)),
    domain: {
      ...spec.domain,
      devices: {
        ...spec.domain.devices,
        disks: (spec.domain.devices.disks ?? []).filter((d) => d.cdrom || !hot.has(d.name)),
      },
    },
  };
}

/** The VMI's volumes and disks after the VM's hotplug volumes are applied (upstream patchHotplugVolumes). */
export function declarativeVolumes(
  vm: VirtualMachine,
  vmi: VirtualMachineInstance,
): { volumes: Volume[]; disks: Disk[] } {
  const tpl = vm.spec.template?.spec;
  const vmVolumes = new Map((tpl?.volumes ?? []).map((v) => [v.name, v]));
  const vmDisks = new Map((tpl?.domain.devices.disks ?? []).map((d) => [d.name, d]));
  const withStatus = new Set((vmi.status?.volumeStatus ?? []).map((s) => s.name));
  // Kept: every non-hotplug volume, and hotplug ones the template still has unchanged.
  const volumes = (vmi.spec.volumes ?? []).filter((v) => {
    if (!isHotplugVolume(v)) return true;
    const want = vmVolumes.get(v.name);
    return want !== undefined && (!isHotplugVolume(want) || sameJson(want, v));
  });
  // Added: template hotplug volumes the VMI lacks and whose earlier removal has finished
  // (no status entry left), as upstream waits for a detach before re-adding.
  const vmiNames = new Set((vmi.spec.volumes ?? []).map((v) => v.name));
  const added = (tpl?.volumes ?? []).filter(
    (v) => isHotplugVolume(v) && !vmiNames.has(v.name) && !withStatus.has(v.name),
  );
  const all = [...volumes, ...added];
  const names = new Set(all.map((v) => v.name));
  // A disk goes with its volume (a disk names the volume it shows), as upstream's
  // filterHotplugVMIDisks: one without a volume stays while the template has it and either
  // has no volume for it either (an empty CD-ROM) or it is a CD-ROM in both (media ejected
  // or being changed: the drive stays, empty).
  const vmVolumeNames = new Set(vmVolumes.keys());
  const disks = (vmi.spec.domain.devices.disks ?? []).filter((d) => {
    if (names.has(d.name)) return true;
    const vmDisk = vmDisks.get(d.name);
    if (!vmDisk) return false;
    return !vmVolumeNames.has(d.name) || (!!vmDisk.cdrom && !!d.cdrom);
  });
  const have = new Set(disks.map((d) => d.name));
  for (const v of added) {
    const d = vmDisks.get(v.name);
    if (d && !have.has(d.name)) disks.push(structuredClone(d));
  }
  return { volumes: all, disks };
}

/** The JSON patch that brings the running VMI's hotplug volumes in line with the VM, or undefined. */
export function declarativeVolumePatch(
  vm: VirtualMachine,
  vmi: VirtualMachineInstance,
): unknown[] | undefined {
  if (vmi.status?.phase !== 'Running' || vmi.metadata?.deletionTimestamp) return undefined;
  const next = declarativeVolumes(vm, vmi);
  const oldVolumes = vmi.spec.volumes;
  const oldDisks = vmi.spec.domain.devices.disks;
  if (sameJson(oldVolumes ?? [], next.volumes) && sameJson(oldDisks ?? [], next.disks)) return undefined;
  const ops: unknown[] = [];
  const put = (path: string, old: unknown[] | undefined, value: unknown[]) => {
    if (old === undefined) ops.push({ op: 'add', path, value });
    else ops.push({ op: 'test', path, value: old }, { op: 'replace', path, value });
  };
  put('/spec/volumes', oldVolumes, next.volumes);
  put('/spec/domain/devices/disks', oldDisks, next.disks);
  return ops;
}
