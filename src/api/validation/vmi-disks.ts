/**
 * Disk rules of a VMI spec (upstream's VMI create admitter): names unique and matching a
 * volume, one target per disk, supported buses (IDE rejected), boot order, cache, io,
 * error policy, serial and block size values, and every volume used by a disk.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { Disk, VirtualMachineInstanceSpec, Volume } from '../generated/types';
import { isDNS1123Label } from './names';
import { validateHotplugVolumes } from './vmi-hotplug';

const arrayLenMax = 256;
const maxStrLen = 256;
const serialRe = /^[A-Za-z0-9_.+-]+$/;
const pciAddressRe = /^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/;
const buses = ['virtio', 'scsi', 'sata', 'usb'];

function validateDisk(
  field: FieldPath,
  idx: number,
  disk: Disk,
  firstIndexByName: Map<string, number>,
): FieldError[] {
  const errs: FieldError[] = [];
  const p = field.index(idx);
  const other = firstIndexByName.get(disk.name);
  if (other !== undefined && other !== idx) {
    errs.push(fieldError(p.child('name'), `${p} and ${field.index(other)} must not have the same Name.`));
  }
  const targets: [string, { bus?: string } | undefined][] = [
    ['disk', disk.disk],
    ['lun', disk.lun],
    ['cdrom', disk.cdrom],
  ];
  const set = targets.filter(([, t]) => t !== undefined && t !== null);
  if (set.length > 1) errs.push(fieldError(p, `${p} can only have a single target type defined`));
  const [diskType, target] = set[set.length - 1] ?? ['disk', undefined];
  const bus = target?.bus ?? '';
  if (disk.disk?.pciAddress) {
    if (disk.disk.bus !== 'virtio') {
      errs.push(
        fieldError(
          p.child('disk', 'pciAddress'),
          `disk ${p.child('name')} - setting a PCI address is only possible with bus type virtio.`,
        ),
      );
    }
    if (!pciAddressRe.test(disk.disk.pciAddress)) {
      errs.push(
        fieldError(
          p.child('disk', 'pciAddress'),
          `disk ${p.child('name')} has malformed PCI address (${disk.disk.pciAddress}).`,
        ),
      );
    }
  }
  if (disk.bootOrder !== undefined && disk.bootOrder < 1) {
    errs.push(fieldError(p.child('bootOrder'), `${p} must have a boot order > 0, if supplied`));
  }
  if (bus) {
    if (bus === 'ide') {
      errs.push(fieldError(p.child(diskType, 'bus'), 'IDE bus is not supported'));
    } else {
      if (!buses.includes(bus)) {
        errs.push(
          fieldError(
            p.child(diskType, 'bus'),
            `${p} is set with an unrecognized bus ${bus}, must be one of: [${buses.join(' ')}]`,
          ),
        );
      }
      if (diskType === 'cdrom' && bus === 'virtio') {
        errs.push(fieldError(p.child('cdrom', 'bus'), `Bus type ${bus} is invalid for CD-ROM device`));
      }
      if (disk.disk && bus === 'sata' && disk.disk.readonly) {
        errs.push(fieldError(p.child('disk', 'bus'), `${bus} hard-disks do not support read-only.`));
      }
    }
    if (disk.dedicatedIOThread && bus !== 'virtio') {
      errs.push(
        fieldError(p, `IOThreads are not supported for disks on a ${bus} bus`, 'FieldValueNotSupported'),
      );
    }
  }
  if (disk.serial) {
    if (!serialRe.test(disk.serial)) {
      errs.push(
        fieldError(
          p.child('serial'),
          `${p} must be made up of the following characters [A-Za-z0-9_.+-], if specified`,
        ),
      );
    }
    if ([...disk.serial].length > maxStrLen) {
      errs.push(
        fieldError(
          p.child('serial'),
          `${p} must be less than or equal to ${maxStrLen} in length, if specified`,
        ),
      );
    }
  }
  if (disk.cache && !['none', 'writethrough', 'writeback'].includes(disk.cache)) {
    errs.push(fieldError(p.child('cache'), `${p.child('cache')} has invalid value ${disk.cache}`));
  }
  if (disk.io && disk.io !== 'native' && disk.io !== 'threads') {
    errs.push(
      fieldError(
        p.child('io'),
        `Disk IO mode for ${p.child('io')} is not supported. Supported modes are: native, threads.`,
        'FieldValueNotSupported',
      ),
    );
  }
  if (
    disk.errorPolicy !== undefined &&
    !['stop', 'ignore', 'report', 'enospace'].includes(disk.errorPolicy)
  ) {
    errs.push(
      fieldError(p.child('errorPolicy'), `${p.child('errorPolicy')} has invalid value "${disk.errorPolicy}"`),
    );
  }
  for (const m of isDNS1123Label(String(disk.name ?? ''))) errs.push(fieldError(p.child('name'), m));
  const bs = disk.blockSize;
  if (bs) {
    const custom = bs.custom;
    const matching = bs.matchVolume !== undefined && bs.matchVolume.enabled !== false;
    if (custom && matching) {
      errs.push(
        fieldError(p.child('blockSize'), "Block size matching can't be enabled together with a custom value"),
      );
    } else if (custom) {
      const logical = custom.logical ?? 0;
      const physical = custom.physical ?? 0;
      if (logical > physical) {
        errs.push(
          fieldError(
            p.child('blockSize', 'custom', 'logical'),
            `Logical size ${logical} must be the same or less than the physical size of ${physical}`,
          ),
        );
      } else {
        for (const [name, size] of [
          ['logical', logical],
          ['physical', physical],
        ] as const) {
          let reason = '';
          if (size < 512) reason = `Provided size of ${size} is less than the supported minimum size of 512`;
          else if (size > 2097152)
            reason = `Provided size of ${size} is greater than the supported maximum size of 2097152`;
          else if ((size & (size - 1)) !== 0) reason = `Provided size of ${size} is not a power of 2`;
          if (reason) errs.push(fieldError(p.child('blockSize', 'custom', name), reason));
        }
      }
    }
  }
  return errs;
}

/** Disk rules plus disk-to-volume matching and boot order uniqueness. */
export function validateDisks(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const disks = spec.domain.devices.disks ?? [];
  const disksPath = field.child('domain', 'devices', 'disks');
  if (disks.length > arrayLenMax) {
    return [fieldError(disksPath, `${disksPath} list exceeds the ${arrayLenMax} element limit in length`)];
  }
  const errs: FieldError[] = [];
  const firstIndex = new Map<string, number>();
  disks.forEach((d, i) => {
    if (!firstIndex.has(d.name)) firstIndex.set(d.name, i);
  });
  const volumes = new Map<string, Volume>();
  // A memory dump volume is no disk's (upstream's validateExpectedDisksAndFilesystems).
  for (const v of spec.volumes ?? []) if (!v.memoryDump) volumes.set(v.name, v);
  const bootOrders = new Set<number>();
  /** Boot orders are unique across disks and interfaces. */
  const claimBootOrder = (p: FieldPath, order: number) => {
    if (bootOrders.has(order)) {
      errs.push(
        fieldError(
          p.child('bootOrder'),
          `Boot order for ${p.child('bootOrder')} already set for a different device.`,
        ),
      );
    }
    bootOrders.add(order);
  };
  disks.forEach((disk, idx) => {
    errs.push(...validateDisk(disksPath, idx, disk, firstIndex));
    const p = disksPath.index(idx);
    const volume = volumes.get(disk.name);
    if (!volume) {
      // An empty CD-ROM (media inserted later) is allowed with declarative hotplug.
      if (!disk.cdrom) errs.push(fieldError(p.child('name'), `${p.child('Name')} '${disk.name}' not found.`));
      else if (!config.isFeatureGateEnabled(FeatureGate.DeclarativeHotplugVolumes)) {
        errs.push(
          fieldError(
            p.child('name'),
            `${FeatureGate.DeclarativeHotplugVolumes} feature gate not enabled, cannot define an empty CD-ROM disk`,
          ),
        );
      }
    }
    if (disk.lun && volume && !volume.persistentVolumeClaim && !volume.dataVolume) {
      errs.push(
        fieldError(
          p.child('lun'),
          `${p.child('lun')} can only be mapped to a DataVolume or PersistentVolumeClaim volume.`,
        ),
      );
    }
    if (volume?.downwardMetrics) {
      if (!disk.disk) {
        errs.push(
          fieldError(
            p.child('disk'),
            `DownwardMetrics volume must be mapped to a disk, but disk is not set on ${p.child('disk')}.`,
            'FieldValueRequired',
          ),
        );
      } else if (disk.disk.bus && disk.disk.bus !== 'virtio') {
        errs.push(
          fieldError(
            p.child('disk', 'bus'),
            `DownwardMetrics volume must be mapped to virtio bus, but ${p.child('disk', 'bus')} is set to ${disk.disk.bus}`,
          ),
        );
      }
    }
    if (disk.bootOrder !== undefined && disk.bootOrder >= 1) claimBootOrder(p, disk.bootOrder);
  });
  const ifacesPath = field.child('domain', 'devices', 'interfaces');
  (spec.domain.devices.interfaces ?? []).forEach((iface, idx) => {
    if (iface.bootOrder === undefined) return;
    const p = ifacesPath.index(idx);
    if (iface.bootOrder < 1) {
      errs.push(fieldError(p.child('bootOrder'), `${p} must have a boot order > 0, if supplied`));
    } else claimBootOrder(p, iface.bootOrder);
  });
  errs.push(...validateHotplugVolumes(field, spec, config));
  return errs;
}

/** VMI-only rule: every volume is used by a disk or filesystem (templates get disks defaulted). */
export function validateVolumesHaveDisks(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const names = new Set([
    ...(spec.domain.devices.disks ?? []).map((d) => d.name),
    ...(spec.domain.devices.filesystems ?? []).map((f) => f.name),
  ]);
  const errs: FieldError[] = [];
  (spec.volumes ?? []).forEach((v, idx) => {
    if (v.memoryDump || names.has(v.name)) return;
    const p = field.child('domain', 'volumes').index(idx).child('name');
    errs.push(fieldError(p, `${p} '${v.name}' not found.`));
  });
  return errs;
}
