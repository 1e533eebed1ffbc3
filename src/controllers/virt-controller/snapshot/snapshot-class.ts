/**
 * Which VolumeSnapshotClass snapshots a claim of a StorageClass, as upstream's
 * getVolumeSnapshotClassName: the classes whose driver is the StorageClass's provisioner;
 * one of them, or the one annotated default among several; none means the claim's volume
 * cannot be snapshotted (it is excluded from the VM snapshot).
 */
import type { Lister } from '../../common/controller-ports';
import type { StorageClass, VolumeSnapshotClass } from './resources';

const DEFAULT_CLASS_ANNOTATION = 'snapshot.storage.kubernetes.io/is-default-class';

/** The class's name, '' for none; throws when several match and none is the default. */
export function volumeSnapshotClassFor(
  storageClassName: string,
  storageClasses: Lister<StorageClass>,
  snapshotClasses: Lister<VolumeSnapshotClass>,
): string {
  const sc = storageClasses.get(storageClassName);
  if (!sc) return '';
  const matches = snapshotClasses.list().filter((c) => c.driver === sc.provisioner);
  if (matches.length === 0) return '';
  if (matches.length === 1) return matches[0]!.metadata?.name ?? '';
  const def = matches.find((c) => c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] !== undefined);
  if (def) return def.metadata?.name ?? '';
  throw new Error(`${matches.length} matching VolumeSnapshotClasses for ${storageClassName}`);
}
