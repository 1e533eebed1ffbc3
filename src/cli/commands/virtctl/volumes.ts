/**
 * `virtctl addvolume VM --volume-name=X [--disk-name] [--serial] [--cache] [--bus]
 * [--disk-type] [--persist] [--dry-run]` and `virtctl removevolume VM --volume-name=X`,
 * as upstream v1.9's virtctl (pkg/virtctl/vm/add_volume.go): the volume source is the
 * DataVolume of that name, else the PVC; the request goes to the VM's subresource, and to
 * the VMI's when no such VM exists. `--persist` is upstream's deprecated no-op: the VM's
 * template always gets the volume (DeclarativeHotplugVolumes). Cluster only: local mode
 * does not hotplug volumes (docs/storage.md).
 */
import type { Command } from 'commander';
import type { AddVolumeOptions, Disk, HotplugVolumeSource } from '../../../api/generated/types';
import { DataVolumeType, PersistentVolumeClaimType } from '../../../controllers/runtime/resources';
import { printable } from '../../local/progress';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

const CACHES = ['none', 'writethrough', 'writeback'];

/** upstream getVolumeSourceFromVolume: a DataVolume of that name, else a PVC. */
async function volumeSource(t: Target, name: string): Promise<HotplugVolumeSource> {
  const found = (type: Parameters<Target['client']['get']>[0]) =>
    t.client.get(type, name, t.namespace).then(
      () => true,
      () => false,
    );
  if (await found(DataVolumeType)) return { dataVolume: { name, hotpluggable: true } };
  if (await found(PersistentVolumeClaimType))
    return { persistentVolumeClaim: { claimName: name, hotpluggable: true } };
  throw new Error(`error adding volume, Volume ${name} is not a DataVolume or PersistentVolumeClaim`);
}

export interface AddVolumeFlags {
  volumeName: string;
  diskName?: string;
  serial?: string;
  cache?: string;
  bus?: string;
  diskType?: string;
  dryRun?: boolean;
}

/** The AddVolumeOptions upstream's virtctl sends for `flags` (the volume source aside). */
export function addVolumeOptions(flags: AddVolumeFlags, volumeSource: HotplugVolumeSource): AddVolumeOptions {
  const name = flags.diskName || flags.volumeName;
  if (name.length > 63)
    throw new Error(
      flags.diskName
        ? `Invalid disk name ${name}, must not exceed 63 characters`
        : `Invalid volume name ${name}, must not exceed 63 characters. Use in conjunction with --disk-name to specify a shorter name`,
    );
  const bus = flags.bus ?? 'scsi';
  const disk: Disk = { name };
  switch (flags.diskType ?? 'disk') {
    case 'disk':
      if (bus !== 'scsi' && bus !== 'virtio')
        throw new Error(`Invalid bus type '${bus}' for disk. Only 'scsi' and 'virtio' are supported.`);
      disk.disk = { bus };
      break;
    case 'lun':
      if (bus !== 'scsi')
        throw new Error(`Invalid bus type '${bus}' for LUN disk. Only 'scsi' bus is supported.`);
      disk.lun = { bus };
      break;
    default:
      throw new Error(`Invalid disk type '${flags.diskType}'. Only LUN and Disk are supported.`);
  }
  disk.serial = flags.serial || name;
  if (flags.cache) {
    if (!CACHES.includes(flags.cache))
      throw new Error(`error adding volume, invalid cache value ${flags.cache}`);
    disk.cache = flags.cache;
  }
  return { name, disk, volumeSource, ...(flags.dryRun ? { dryRun: ['All'] } : {}) };
}

const vmMissing = (e: unknown) => /virtualmachine\.kubevirt\.io "[^"]*" not found/.test(String(e));

/** PUTs the volume subresource on the VM, or on the VMI when there is no such VM. */
async function volumeCall(t: Target, name: string, op: 'addvolume' | 'removevolume', body: unknown) {
  if (!t.kubeConfig)
    throw new Error(
      `${op}: volume hotplug needs a cluster (--kubeconfig); local mode does not hotplug volumes`,
    );
  try {
    await t.subresource('PUT', t.namespace, name, op, body, 'virtualmachines');
  } catch (e) {
    if (!vmMissing(e)) throw e;
    await t.subresource('PUT', t.namespace, name, op, body, 'virtualmachineinstances');
  }
}

/** Registers addvolume and removevolume. */
export function registerVolumeCommands(program: Command): void {
  withTargetOptions(
    program
      .command('addvolume')
      .description('add a volume to a running VM')
      .argument('<vm>')
      .requiredOption('--volume-name <name>', 'name of the volume source, either DV or PVC')
      .option('--disk-name <name>', 'name used in the disk/volume section of spec')
      .option('--serial <serial>', 'serial number you want to assign to the disk')
      .option('--cache <mode>', 'cache mode: none, writethrough or writeback')
      .option('--bus <bus>', 'disk bus: scsi (default) or virtio')
      .option('--disk-type <type>', 'disk (default) or lun')
      .option('--persist', '[deprecated] this flag has no effect (upstream v1.9)')
      .option('--dry-run', 'check the request without changing anything'),
  ).action((vm: string, o: TargetOptions & AddVolumeFlags) =>
    withTarget(o, async (t) => {
      const opts = addVolumeOptions(o, await volumeSource(t, o.volumeName));
      await volumeCall(t, vm, 'addvolume', opts);
      process.stdout.write(
        `Successfully submitted add volume request to VM ${printable(vm)} for volume ${printable(o.volumeName)}\n`,
      );
    }),
  );
  withTargetOptions(
    program
      .command('removevolume')
      .description('remove a hotplugged volume from a running VM')
      .argument('<vm>')
      .requiredOption('--volume-name <name>', 'name of the volume to remove')
      .option('--persist', '[deprecated] this flag has no effect (upstream v1.9)')
      .option('--dry-run', 'check the request without changing anything'),
  ).action((vm: string, o: TargetOptions & { volumeName: string; dryRun?: boolean }) =>
    withTarget(o, async (t) => {
      await volumeCall(t, vm, 'removevolume', {
        name: o.volumeName,
        ...(o.dryRun ? { dryRun: ['All'] } : {}),
      });
      process.stdout.write(
        `Successfully submitted remove volume request to VM ${printable(vm)} for volume ${printable(o.volumeName)}\n`,
      );
    }),
  );
}
