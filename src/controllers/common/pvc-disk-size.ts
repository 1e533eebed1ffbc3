/**
 * The size of a filesystem claim's `disk.img` (upstream's replaceForHostDisk), shared by the
 * launcher (PVC disks at start) and the node agent (a hotplugged claim without an image).
 */
import type { PersistentVolumeClaimInfo } from '../../api';
import { parseQuantity, quantityValue } from './quantity';

const MiB = 1024n * 1024n;

/** upstream replaceForHostDisk's size: the request when below the capacity (or no capacity), else the capacity; 1 MiB aligned. */
export function pvcDiskSize(info: PersistentVolumeClaimInfo, field: string): bigint {
  const q = (v: string | number | undefined, f: string) =>
    v === undefined ? undefined : quantityValue(parseQuantity(String(v), f));
  const capacity = q(info.capacity?.storage, `${field}.capacity.storage`);
  const requested = q(info.requests?.storage, `${field}.requests.storage`);
  if (capacity === undefined && requested === undefined)
    throw new Error(
      `${field}: claim '${info.claimName}' has neither a capacity nor a storage request to size disk.img from`,
    );
  const size =
    requested !== undefined && (capacity === undefined || capacity > requested) ? requested : capacity!;
  return (size / MiB) * MiB;
}
