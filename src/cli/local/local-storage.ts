/**
 * Local mode's storage: the project's CSI driver in-process (pool under `<state>/csi`),
 * its StorageClass `kubevirt-ts-local` (the default class and KubeVirt's default virt
 * class, as the install makes it on a cluster), the provisioner and the pod runtime's CSI
 * plugin. Where the host cannot hold the pool (not root, no mkfs.xfs or loop devices), it
 * says why and local mode runs on hand-made hostPath/local PVs as before.
 */
import { storageClassObject, volumeSnapshotClassObject } from '../../controllers/common/csi-objects';
import { LocalCsi, localCsiProblem } from '../../controllers/composition/local-csi/local-csi';
import { publishVolume, unpublishPodVolumes } from '../../controllers/composition/local-csi/node-volumes';
import { LocalProvisioner } from '../../controllers/composition/local-csi/provisioner';
import { LocalSnapshotter } from '../../controllers/composition/local-csi/snapshotter';
import type { PodCsiVolumes } from '../../controllers/local/pod-runtime/pod-runtime-options';
import { AlreadyExistsError } from '../../controllers/runtime/errors';
import { StorageClassType } from '../../controllers/runtime/resources';
import {
  snapshotTypes,
  VolumeSnapshotClassType,
  VolumeSnapshotContentType,
} from '../../controllers/runtime/storage-resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../controllers/runtime/types';

/** Kubernetes' default-class annotation. */
const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';

/** The running storage of local mode. */
export interface LocalStorage {
  csi: LocalCsi;
  provisioner: LocalProvisioner;
  snapshotter: LocalSnapshotter;
  podVolumes: PodCsiVolumes;
}

/** Options of {@link startLocalStorage}. */
export interface LocalStorageOptions {
  client: ObjectClient;
  dir: string;
  nodeName: string;
  log?: (message: string) => void;
}

/**
 * The kinds local mode's store serves for storage besides its built-in ones: the CSI
 * snapshot kinds (the external-snapshotter's CRDs on a cluster) and snapshot.kubevirt.io's
 * and clone.kubevirt.io's, so virt-controller's snapshot, restore and clone controllers run.
 */
export const localStorageTypes: readonly ResourceType[] = [
  ...snapshotTypes.filter((t) => t !== StorageClassType && t.kind !== 'StorageClass'),
  VolumeSnapshotContentType,
];

/** Starts the driver and makes the class; `running` is undefined (and `status` says why) when the host cannot. */
export async function startLocalStorage(
  o: LocalStorageOptions,
): Promise<{ running?: LocalStorage; status: string }> {
  const problem = localCsiProblem();
  if (problem)
    return {
      status: `no dynamic provisioning (${problem}); PersistentVolumeClaims bind to hostPath or local PersistentVolumes only`,
    };
  const csi = new LocalCsi({ dir: o.dir, nodeId: o.nodeName });
  const sc = storageClassObject() as KubeObject;
  sc.metadata = {
    ...sc.metadata,
    annotations: { ...sc.metadata?.annotations, [DEFAULT_CLASS_ANNOTATION]: 'true' },
  };
  // Created once: a class the user changed (or deleted and made again) is theirs.
  const once = (e: unknown) => {
    if (!(e instanceof AlreadyExistsError)) throw e;
  };
  await o.client.create(StorageClassType, sc).catch(once);
  await o.client.create(VolumeSnapshotClassType, volumeSnapshotClassObject() as KubeObject).catch(once);
  const provisioner = new LocalProvisioner({ client: o.client, csi, nodeName: o.nodeName, log: o.log });
  return {
    running: {
      csi,
      provisioner,
      snapshotter: new LocalSnapshotter({ client: o.client, csi, log: o.log }),
      podVolumes: {
        publish: (podDir, v) => publishVolume(csi, podDir, v),
        unpublishAll: (podDir) => unpublishPodVolumes(csi, podDir),
      },
    },
    status: `StorageClass ${sc.metadata?.name} (default; CSI driver in-process), pool ${csi.poolDir} (mounted on first use)`,
  };
}
