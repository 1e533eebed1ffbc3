/**
 * Storage kinds more than one component reads: snapshot.kubevirt.io's and clone.kubevirt.io's
 * (KubeVirt's CRDs), the CSI snapshot kinds of snapshot.storage.k8s.io (the
 * external-snapshotter's CRDs) and storage.k8s.io's StorageClass.
 */
import { resourceType as rt } from './resources';
import type { ResourceType } from './types';

export const VirtualMachineSnapshotType = rt(
  'snapshot.kubevirt.io',
  'v1beta1',
  'VirtualMachineSnapshot',
  'virtualmachinesnapshots',
  true,
  true,
);
export const VirtualMachineSnapshotContentType = rt(
  'snapshot.kubevirt.io',
  'v1beta1',
  'VirtualMachineSnapshotContent',
  'virtualmachinesnapshotcontents',
  true,
  true,
);
export const VirtualMachineRestoreType = rt(
  'snapshot.kubevirt.io',
  'v1beta1',
  'VirtualMachineRestore',
  'virtualmachinerestores',
  true,
  true,
);
export const VirtualMachineCloneType = rt(
  'clone.kubevirt.io',
  'v1beta1',
  'VirtualMachineClone',
  'virtualmachineclones',
  true,
  true,
);
export const VolumeSnapshotType = rt(
  'snapshot.storage.k8s.io',
  'v1',
  'VolumeSnapshot',
  'volumesnapshots',
  true,
  true,
);
export const VolumeSnapshotClassType = rt(
  'snapshot.storage.k8s.io',
  'v1',
  'VolumeSnapshotClass',
  'volumesnapshotclasses',
  false,
  false,
);
export const StorageClassType = rt('storage.k8s.io', 'v1', 'StorageClass', 'storageclasses', false, false);

/** The kinds the snapshot controllers watch (for an embedded store: serve these). */
export const snapshotTypes: readonly ResourceType[] = [
  VirtualMachineSnapshotType,
  VirtualMachineSnapshotContentType,
  VirtualMachineRestoreType,
  VirtualMachineCloneType,
  VolumeSnapshotType,
  VolumeSnapshotClassType,
  StorageClassType,
];

/** The external-snapshotter's VolumeSnapshotContent (cluster-scoped); local mode's snapshotter writes it. */
export const VolumeSnapshotContentType = rt(
  'snapshot.storage.k8s.io',
  'v1',
  'VolumeSnapshotContent',
  'volumesnapshotcontents',
  false,
  true,
);
