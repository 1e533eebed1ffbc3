/**
 * The Kubernetes objects that go with the CSI driver `csi.kubevirt-ts.io`: its CSIDriver,
 * the `kubevirt-ts-local` StorageClass (KubeVirt's default virt class) and a
 * VolumeSnapshotClass. Shared: the install (virt-operator's components, manifests/)
 * renders them, and the driver's own names come from here.
 */

/** The driver's name: the CSIDriver object's and StorageClasses' `provisioner`. */
export const DRIVER_NAME = 'csi.kubevirt-ts.io';
/** The StorageClass parameter that says every node sees the same pool. */
export const SHARED_PARAMETER = 'shared';

/** The StorageClass's and VolumeSnapshotClass's name. */
export const LOCAL_CLASS = 'kubevirt-ts-local';
/** KubeVirt's annotation for the StorageClass its VMs' DataVolumes use by default. */
export const DEFAULT_VIRT_CLASS_ANNOTATION = 'storageclass.kubevirt.io/is-default-virt-class';

/** The CSIDriver object: no attach step, persistent volumes only, fsGroup applied by the kubelet. */
export function csiDriverObject() {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIDriver',
    metadata: { name: DRIVER_NAME },
    spec: {
      attachRequired: false,
      podInfoOnMount: false,
      volumeLifecycleModes: ['Persistent'],
      // Capacity tracking needs the provisioner to publish CSIStorageCapacity objects; until
      // it runs with --enable-capacity, the scheduler must not look for them.
      storageCapacity: false,
      fsGroupPolicy: 'File',
      requiresRepublish: false,
    },
  };
}

/** Options of {@link storageClassObject}. */
export interface StorageClassOptions {
  name?: string;
  /** The pool is shared by every node (RWX and ROX for block volumes; no topology). */
  shared?: boolean;
  /** Annotate it as KubeVirt's default virt class (default true). */
  defaultVirtClass?: boolean;
}

/** A StorageClass of the driver: bound when the first pod is scheduled, so the volume lands on its node. */
export function storageClassObject(o: StorageClassOptions = {}) {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: {
      name: o.name ?? LOCAL_CLASS,
      ...((o.defaultVirtClass ?? true) ? { annotations: { [DEFAULT_VIRT_CLASS_ANNOTATION]: 'true' } } : {}),
    },
    provisioner: DRIVER_NAME,
    parameters: o.shared ? { [SHARED_PARAMETER]: 'true' } : {},
    reclaimPolicy: 'Delete',
    volumeBindingMode: o.shared ? 'Immediate' : 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
  };
}

/** The VolumeSnapshotClass (snapshot.storage.k8s.io/v1, the external-snapshotter's CRDs). */
export function volumeSnapshotClassObject(name = LOCAL_CLASS) {
  return {
    apiVersion: 'snapshot.storage.k8s.io/v1',
    kind: 'VolumeSnapshotClass',
    metadata: { name, annotations: { 'snapshot.storage.kubernetes.io/is-default-class': 'true' } },
    driver: DRIVER_NAME,
    deletionPolicy: 'Delete',
  };
}
