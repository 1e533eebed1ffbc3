/**
 * The kinds the snapshot and restore controllers read and write: snapshot.kubevirt.io's
 * (served by KubeVirt's CRDs), the CSI snapshot kinds of snapshot.storage.k8s.io (served by
 * the external-snapshotter's CRDs) and storage.k8s.io's StorageClass.
 */
import type { ObjectMeta } from '../../../api/generated/types';

export {
  StorageClassType,
  snapshotTypes,
  VirtualMachineCloneType,
  VirtualMachineRestoreType,
  VirtualMachineSnapshotContentType,
  VirtualMachineSnapshotType,
  VolumeSnapshotClassType,
  VolumeSnapshotType,
} from '../../runtime/storage-resources';

/** A CSI VolumeSnapshot, as far as the controllers read it. */
export interface VolumeSnapshot {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec: { source: { persistentVolumeClaimName?: string }; volumeSnapshotClassName?: string };
  status?: {
    readyToUse?: boolean;
    creationTime?: string;
    restoreSize?: string;
    error?: { message?: string; time?: string };
  };
}

/** A VolumeSnapshotClass (cluster-scoped). */
export interface VolumeSnapshotClass {
  metadata?: { name?: string; annotations?: Record<string, string> };
  driver: string;
  deletionPolicy?: string;
}

/** A StorageClass (cluster-scoped). */
export interface StorageClass {
  metadata?: { name?: string };
  provisioner: string;
  volumeBindingMode?: string;
}

/** A PersistentVolumeClaim, as far as the controllers read and write it. */
export interface Pvc {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: {
    accessModes?: string[];
    resources?: { requests?: Record<string, string> };
    storageClassName?: string;
    volumeMode?: string;
    dataSource?: { apiGroup?: string; kind: string; name: string };
    dataSourceRef?: { apiGroup?: string; kind: string; name: string };
  };
  status?: { phase?: string };
}
