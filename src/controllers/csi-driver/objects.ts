/** The driver's Kubernetes objects (rendered in common/, which the install shares). */
export {
  csiDriverObject,
  DEFAULT_VIRT_CLASS_ANNOTATION,
  LOCAL_CLASS,
  type StorageClassOptions,
  storageClassObject,
  volumeSnapshotClassObject,
} from '../common/csi-objects';
