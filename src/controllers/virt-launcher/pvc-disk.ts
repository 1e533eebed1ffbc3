/**
 * Filesystem PVC and DataVolume volumes: the claim's filesystem is mounted at
 * `<private>/vmi-disks/<volume>/` and must hold the guest's image as `disk.img` (upstream's
 * layout). The launcher checks it is there before the domain names it, so a claim
 * without an image fails with the volume and the path instead of a QEMU open error.
 */
import { stat } from 'node:fs/promises';
import type { VirtualMachineInstance } from '../../api';
import type { PathMap } from '../common/path-map';
import { mountedDiskDir } from './volume-sources';

/** Checks the disk image of PVC/DataVolume volume `i`; throws naming the volume and the path when it is missing. */
export async function checkPvcDisk(vmi: VirtualMachineInstance, i: number, map: PathMap): Promise<void> {
  const vol = vmi.spec.volumes![i];
  const kind = vol.persistentVolumeClaim ? 'persistentVolumeClaim' : 'dataVolume';
  const claim = vol.persistentVolumeClaim?.claimName ?? vol.dataVolume?.name;
  const container = `${mountedDiskDir(vol.name)}/disk.img`;
  const file = map.toHost(container);
  const st = await stat(file).catch(() => undefined);
  if (!st?.isFile() && !st?.isBlockDevice())
    throw new Error(
      `spec.volumes[${i}].${kind}: claim '${claim}' of volume '${vol.name}' holds no disk image: ${container} (host ${file}) is missing; a filesystem claim must hold the image as disk.img`,
    );
}
