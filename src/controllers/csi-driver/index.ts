/**
 * kubevirt-ts's CSI driver (`csi.kubevirt-ts.io`): volumes in a per-node pool on a
 * loop-mounted XFS with reflink, snapshots and clones as copy-on-write copies.
 * docs/storage.md describes it.
 */
export { capabilityProblem, checkParameters, SHARED_PARAMETER } from './access-modes';
export { ControllerService } from './controller-service';
export { type CsiDriver, type CsiDriverOptions, startCsiDriver } from './csi-driver';
export { CsiError } from './errors';
export { type CsiServer, type CsiServices, serveCsi } from './grpc-server';
export { DRIVER_NAME, IdentityService } from './identity-service';
export { isSnapshotId, isVolumeId, snapshotIdFor, volumeIdFor } from './ids';
export { KubeletRegistration, type KubeletRegistrationOptions } from './kubelet-registration';
export { NodeService } from './node-service';
export {
  csiDriverObject,
  DEFAULT_VIRT_CLASS_ANNOTATION,
  LOCAL_CLASS,
  type StorageClassOptions,
  storageClassObject,
  volumeSnapshotClassObject,
} from './objects';
export { Pool, PoolError, type SnapshotRecord, type VolumeRecord } from './pool';
export { mountPoolFilesystem, unmountPoolFilesystem } from './pool-filesystem';
export { TOPOLOGY_KEY } from './topology';
