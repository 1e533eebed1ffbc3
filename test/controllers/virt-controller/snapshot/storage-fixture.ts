/**
 * The storage a snapshot or clone test on the embedded store plays the CSI side with:
 * two StorageClasses, `local` (the project's driver, with the `local-snap`
 * VolumeSnapshotClass) and `plain` (no snapshot class), and claims bound at once.
 */
import type { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { PersistentVolumeClaimType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import {
  type Pvc,
  StorageClassType,
  VolumeSnapshotClassType,
} from '../../../../src/controllers/virt-controller/snapshot/resources';

/** Creates the `local` and `plain` StorageClasses and the `local-snap` VolumeSnapshotClass. */
export async function createSnapshotStorageClasses(s: EmbeddedStore): Promise<void> {
  await s.create(StorageClassType, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'local' },
    provisioner: 'csi.kubevirt-ts.io',
  } as never);
  await s.create(StorageClassType, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'plain' },
    provisioner: 'kubernetes.io/no-provisioner',
  } as never);
  await s.create(VolumeSnapshotClassType, {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshotClass',
    metadata: { name: 'local-snap' },
    driver: 'csi.kubevirt-ts.io',
    deletionPolicy: 'Delete',
  } as never);
}

/** Creates a 1Gi ReadWriteOnce claim `ns/name` on class `sc`, Bound. */
export async function createBoundClaim(
  s: EmbeddedStore,
  ns: string,
  name: string,
  sc: string,
): Promise<void> {
  const made = await s.create<Pvc & KubeObject>(PersistentVolumeClaimType, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: ns },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      storageClassName: sc,
    },
  } as never);
  await s.updateStatus(PersistentVolumeClaimType, { ...made, status: { phase: 'Bound' } } as never);
}
