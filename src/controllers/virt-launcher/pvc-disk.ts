/**
 * PVC and DataVolume volumes, as upstream's launcher and handler see them (pkg/host-disk,
 * isBlockDeviceVolume): a claim whose `status.volumeStatus` entry says `volumeMode: Block`
 * is the device node the pod gets at `/dev/<volume>` (`volumeDevices`), which the domain
 * opens as `<disk type="block">`; any other claim's filesystem is mounted at
 * `<private>/vmi-disks/<volume>/` and holds the guest's image as `disk.img`, created as a
 * sparse raw file when absent (upstream ReplacePVCByHostDisk + DiskImgCreator): the
 * claim's request when smaller than its capacity, else its capacity, aligned down to
 * 1 MiB; when the filesystem has less room (after a reserve), up to a tolerated
 * percentage less is accepted and the image takes what there is.
 */
import { open, stat, statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { PersistentVolumeClaimInfo, VirtualMachineInstance } from '../../api';
import { PVC_DISK_DEFAULTS } from '../common/launcher-args';
import type { PathMap } from '../common/path-map';
import { pvcDiskSize } from '../common/pvc-disk-size';
import { mountedDiskDir } from './volume-sources';

/** How a filesystem claim's image is sized against the room it has. */
export interface PvcDiskLimits {
  /** Percent less than asked that is still accepted (upstream's default 10). */
  lessPVCSpaceToleration: number;
  /** Bytes kept free on the claim's filesystem (upstream's default 128 KiB). */
  minimumReservePVCBytes: number;
}

/** What {@link preparePvcDisk} found or did. */
export interface PreparedPvcDisk {
  /** The volume is a block device at `/dev/<volume>`. */
  block: boolean;
  /** The `disk.img` created now (host path), if one was. */
  created?: string;
}

export { pvcDiskSize } from '../common/pvc-disk-size';

/** The claim info the VMI controller recorded for volume `name`. */
export function claimInfo(vmi: VirtualMachineInstance, name: string): PersistentVolumeClaimInfo | undefined {
  return vmi.status?.volumeStatus?.find((s) => s.name === name)?.persistentVolumeClaimInfo;
}

/**
 * Checks (block) or checks-or-creates (filesystem) the disk of PVC/DataVolume volume `i`.
 * Errors name the volume's field path and the file.
 */
export async function preparePvcDisk(
  vmi: VirtualMachineInstance,
  i: number,
  map: PathMap,
  limits: PvcDiskLimits = PVC_DISK_DEFAULTS,
): Promise<PreparedPvcDisk> {
  const vol = vmi.spec.volumes![i];
  const kind = vol.persistentVolumeClaim ? 'persistentVolumeClaim' : 'dataVolume';
  const claim = vol.persistentVolumeClaim?.claimName ?? vol.dataVolume?.name;
  const field = `spec.volumes[${i}].${kind}`;
  const info = claimInfo(vmi, vol.name);
  const statusField = `status.volumeStatus[${vol.name}].persistentVolumeClaimInfo`;
  if (info?.volumeMode === 'Block') {
    const dev = map.toHost(`/dev/${vol.name}`);
    const st = await stat(dev).catch(() => undefined);
    if (!st?.isBlockDevice())
      throw new Error(
        `${field}: claim '${claim}' of volume '${vol.name}' is volumeMode Block but /dev/${vol.name} (host ${dev}) is not a block device: the pod must have it in volumeDevices`,
      );
    return { block: true };
  }
  const container = `${mountedDiskDir(vol.name)}/disk.img`;
  const file = map.toHost(container);
  const st = await stat(file).catch(() => undefined);
  if (st?.isFile() || st?.isBlockDevice()) return { block: false };
  if (st)
    throw new Error(
      `${field}: claim '${claim}' of volume '${vol.name}': ${container} exists but is not a file`,
    );
  if (!info)
    throw new Error(
      `${field}: claim '${claim}' of volume '${vol.name}' holds no disk image: ${container} (host ${file}) is missing, and ${statusField} (which the VMI controller records) is not there to size a new one from`,
    );
  const size = pvcDiskSize(info, statusField);
  if (size === 0n)
    throw new Error(`${field}: the size for volume ${vol.name} is too low, must be at least 1MiB`);
  const dir = dirname(file);
  const dirStat = await stat(dir).catch(() => undefined);
  if (!dirStat?.isDirectory())
    throw new Error(
      `${field}: claim '${claim}' of volume '${vol.name}' is not mounted at ${mountedDiskDir(vol.name)} (host ${dir})`,
    );
  const fs = await statfs(dir);
  const available = BigInt(fs.bavail) * BigInt(fs.bsize) - BigInt(limits.minimumReservePVCBytes);
  let bytes = size;
  if (bytes > available) {
    // upstream shrinkRequestedSize: storage often gives a little less than asked (filesystem overhead).
    const tolerated = (bytes * BigInt(100 - limits.lessPVCSpaceToleration)) / 100n;
    if (tolerated > available)
      throw new Error(
        `${field}: unable to create ${container}, not enough space, demanded size ${bytes} B is bigger than available space ${available} B, also after taking ${limits.lessPVCSpaceToleration} % toleration into account`,
      );
    bytes = available;
  }
  // A sparse raw file: no blocks written until the guest writes them.
  const fh = await open(file, 'wx', 0o660);
  try {
    await fh.truncate(Number(bytes));
  } finally {
    await fh.close();
  }
  return { block: false, created: file };
}
