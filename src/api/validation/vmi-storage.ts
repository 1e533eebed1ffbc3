/**
 * Disk and volume rules of a VMI spec (upstream's VMI create admitter): names unique and
 * matching, one target per disk, supported buses (IDE rejected), boot order, cache, io,
 * error policy, serial and block size values, one source per volume, cloud-init limits,
 * host disks behind their feature gate.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { quantityIsZero } from '../config/quantity';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { Disk, VirtualMachineInstanceSpec, Volume } from '../generated/types';
import { validateConfigDiskNames } from './config-disk-names';
import { isDNS1123Label } from './names';

const arrayLenMax = 256;
const maxStrLen = 256;
const cloudInitUserMaxLen = 2048;
const cloudInitNetworkMaxLen = 2048;
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
  for (const v of spec.volumes ?? []) volumes.set(v.name, v);
  const bootOrders = new Set<number>();
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
    if (disk.bootOrder !== undefined && disk.bootOrder >= 1) {
      if (bootOrders.has(disk.bootOrder)) {
        errs.push(
          fieldError(
            p.child('bootOrder'),
            `Boot order for ${p.child('bootOrder')} already set for a different device.`,
          ),
        );
      }
      bootOrders.add(disk.bootOrder);
    }
  });
  const ifacesPath = field.child('domain', 'devices', 'interfaces');
  (spec.domain.devices.interfaces ?? []).forEach((iface, idx) => {
    if (iface.bootOrder === undefined) return;
    const p = ifacesPath.index(idx);
    if (iface.bootOrder < 1) {
      errs.push(fieldError(p.child('bootOrder'), `${p} must have a boot order > 0, if supplied`));
    } else {
      if (bootOrders.has(iface.bootOrder)) {
        errs.push(
          fieldError(
            p.child('bootOrder'),
            `Boot order for ${p.child('bootOrder')} already set for a different device.`,
          ),
        );
      }
      bootOrders.add(iface.bootOrder);
    }
  });
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

const volumeSources = [
  'persistentVolumeClaim',
  'sysprep',
  'cloudInitNoCloud',
  'cloudInitConfigDrive',
  'containerDisk',
  'ephemeral',
  'emptyDisk',
  'hostDisk',
  'dataVolume',
  'configMap',
  'secret',
  'downwardAPI',
  'serviceAccount',
  'downwardMetrics',
  'memoryDump',
  'containerPath',
] as const;

function isBase64(s: string): boolean {
  return /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0;
}

function validateCloudInit(p: FieldPath, volume: Volume): FieldError[] {
  const src = volume.cloudInitNoCloud ?? volume.cloudInitConfigDrive;
  if (!src) return [];
  const type = volume.cloudInitNoCloud ? 'cloudInitNoCloud' : 'cloudInitConfigDrive';
  const tp = p.child(type);
  const errs: FieldError[] = [];
  let userCount = 0;
  let userLen = 0;
  let netCount = 0;
  let netLen = 0;
  if (src.secretRef?.name) userCount++;
  if (src.userDataBase64) {
    userCount++;
    if (!isBase64(src.userDataBase64)) {
      errs.push(
        fieldError(
          tp.child('userDataBase64'),
          `${tp.child('userDataBase64')}.${type}.userDataBase64 is not a valid base64 value.`,
        ),
      );
    } else userLen = Buffer.from(src.userDataBase64, 'base64').length;
  }
  if (src.userData) {
    userCount++;
    userLen = Buffer.byteLength(src.userData, 'utf8');
  }
  if (userCount > 1) errs.push(fieldError(tp, `${tp} must have only one userdatasource set.`));
  if (userLen > cloudInitUserMaxLen) {
    errs.push(
      fieldError(
        tp,
        `${tp} userdata exceeds ${cloudInitUserMaxLen} byte limit. Should use UserDataSecretRef for larger data.`,
      ),
    );
  }
  if (src.networkDataSecretRef?.name) netCount++;
  if (src.networkDataBase64) {
    netCount++;
    if (!isBase64(src.networkDataBase64)) {
      errs.push(
        fieldError(
          tp.child('networkDataBase64'),
          `${tp.child('networkDataBase64')}.${type}.networkDataBase64 is not a valid base64 value.`,
        ),
      );
    } else netLen = Buffer.from(src.networkDataBase64, 'base64').length;
  }
  if (src.networkData) {
    netCount++;
    netLen = Buffer.byteLength(src.networkData, 'utf8');
  }
  if (netCount > 1) errs.push(fieldError(tp, `${tp} must have only one networkdata source set.`));
  if (netLen > cloudInitNetworkMaxLen) {
    errs.push(
      fieldError(
        tp,
        `${tp} networkdata exceeds ${cloudInitNetworkMaxLen} byte limit. Should use NetworkDataSecretRef for larger data.`,
      ),
    );
  }
  if (userCount === 0 && netCount === 0) {
    errs.push(fieldError(tp, `${tp} must have at least one userdatasource or one networkdatasource set.`));
  }
  return errs;
}

/** Absolute, normalised path without relative parts (upstream's `validatePath`). */
export function validateAbsolutePath(field: FieldPath, path: string): FieldError[] {
  if (path === '/') return [fieldError(field, `${field} must not point to root`)];
  const trimmed = path.replace(/\/+$/, '');
  const parts = trimmed.split('/');
  const clean = parts[0] === '' && parts.slice(1).every((s) => s !== '' && s !== '.' && s !== '..');
  if (!clean)
    return [fieldError(field, `${field} must be an absolute path to a file without relative components`)];
  return [];
}

/** Volume rules; `field` is the spec's path. */
export function validateVolumes(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const volumes = spec.volumes ?? [];
  const vp = field.child('volumes');
  if (volumes.length > arrayLenMax) {
    return [fieldError(vp, `${vp} list exceeds the ${arrayLenMax} element limit in length`)];
  }
  const errs: FieldError[] = [];
  const firstIndex = new Map<string, number>();
  let serviceAccounts = 0;
  let downwardMetrics = 0;
  let memoryDumps = 0;
  volumes.forEach((volume, idx) => {
    const p = vp.index(idx);
    const other = firstIndex.get(volume.name);
    if (other === undefined) firstIndex.set(volume.name, idx);
    else errs.push(fieldError(p.child('name'), `${p} and ${vp.index(other)} must not have the same Name.`));
    const sources = volumeSources.filter((s) => volume[s] !== undefined && volume[s] !== null);
    if (sources.length !== 1) errs.push(fieldError(p, `${p} must have exactly one source type set`));
    if (volume.serviceAccount) serviceAccounts++;
    if (volume.downwardMetrics) downwardMetrics++;
    if (volume.memoryDump) memoryDumps++;
    if (volume.dataVolume && !volume.dataVolume.name) {
      errs.push(fieldError(p.child('name'), "DataVolume 'name' must be set", 'FieldValueRequired'));
    }
    errs.push(...validateCloudInit(p, volume));
    if (volume.downwardMetrics && !config.isFeatureGateEnabled(FeatureGate.DownwardMetrics)) {
      errs.push(
        fieldError(p, 'downwardMetrics disks are not allowed: DownwardMetrics feature gate is not enabled.'),
      );
    }
    const hd = volume.hostDisk;
    if (hd) {
      if (!config.isFeatureGateEnabled(FeatureGate.HostDisk)) {
        errs.push(fieldError(p, 'HostDisk feature gate is not enabled'));
      }
      if (!hd.path) {
        errs.push(
          fieldError(
            p.child('hostDisk', 'path'),
            `${p.child('hostDisk', 'path')} is required for hostDisk volume`,
            'FieldValueNotFound',
          ),
        );
      }
      if (hd.type !== 'Disk' && hd.type !== 'DiskOrCreate') {
        errs.push(
          fieldError(
            p.child('hostDisk', 'type'),
            `${p.child('hostDisk', 'type')} has invalid value '${hd.type ?? ''}', allowed are 'Disk' or 'DiskOrCreate'`,
          ),
        );
      }
      if (hd.type === 'Disk' && !quantityIsZero(hd.capacity)) {
        errs.push(
          fieldError(
            p.child('hostDisk', 'capacity'),
            `${p.child('hostDisk', 'capacity')} is allowed to pass only with ${p.child('hostDisk', 'type')} equal to 'DiskOrCreate'`,
          ),
        );
      }
      if (hd.path) errs.push(...validateAbsolutePath(p.child('hostDisk', 'path'), hd.path));
    }
    errs.push(...validateConfigDiskNames(p, volume));
    if (volume.configMap && !volume.configMap.name) {
      errs.push(
        fieldError(p.child('configMap', 'name'), `${p.child('configMap', 'name')} is a required field`),
      );
    }
    if (volume.secret && !volume.secret.secretName) {
      errs.push(
        fieldError(p.child('secret', 'secretName'), `${p.child('secret', 'secretName')} is a required field`),
      );
    }
    if (volume.serviceAccount && !volume.serviceAccount.serviceAccountName) {
      const sp = p.child('serviceAccount', 'serviceAccountName');
      errs.push(fieldError(sp, `${sp} is a required field`));
    }
    if (volume.containerDisk?.path) {
      errs.push(...validateAbsolutePath(p.child('containerDisk'), volume.containerDisk.path));
    }
  });
  if (serviceAccounts > 1) errs.push(fieldError(vp, `${vp} must have max one serviceAccount volume set`));
  if (downwardMetrics > 1) errs.push(fieldError(vp, `${vp} must have max one downwardMetric volume set`));
  if (memoryDumps > 1) errs.push(fieldError(vp, `${vp} must have max one memory dump volume set`));
  return errs;
}
