/**
 * The storage stack beside the node DaemonSet (csi-driver.ts): the VolumeSnapshot CRDs
 * (external-snapshotter's, copied into crds/external-snapshotter/ from the module the
 * sidecars are built from), snapshot-controller (a Deployment of two electing one leader,
 * as external-snapshotter's deploy/kubernetes/snapshot-controller, with distributed
 * snapshotting: it labels each snapshot content with its volume's node, whose
 * csi-snapshotter takes it), the CSIDriver object, the `kubevirt-ts-local` StorageClass
 * (KubeVirt's default virt class) and VolumeSnapshotClass.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { csiDriverObject, storageClassObject, volumeSnapshotClassObject } from '../../common/csi-objects';
import type { KubeObject } from '../../runtime/types';
import { csiNodeObjects } from './csi-driver';
import {
  componentEnv,
  componentLabels,
  devClusterPodFields,
  type InstallOptions,
  unprivilegedContainerSecurity,
} from './install-options';
import { clusterRoleFor, type Rule, roleFor, serviceAccount } from './rbac';

const SNAPSHOT_CONTROLLER = 'snapshot-controller';
const READ = ['get', 'list', 'watch'];
/** The CSI snapshot API group (external-snapshotter's CRDs). */
export const SNAPSHOT_STORAGE_GROUP = 'snapshot.storage.k8s.io';
/** Where the VolumeSnapshot CRDs are, under the crds directory. */
export const SNAPSHOT_CRDS_SUBDIR = 'external-snapshotter';

/** The VolumeSnapshot, VolumeSnapshotContent and VolumeSnapshotClass CRDs. */
export function snapshotCrdObjects(crdsDir: string): KubeObject[] {
  const dir = join(crdsDir, SNAPSHOT_CRDS_SUBDIR);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) =>
      parseAllDocuments(readFileSync(join(dir, f), 'utf8'))
        .map((d) => d.toJS() as KubeObject | null)
        .filter((o): o is KubeObject => o?.kind === 'CustomResourceDefinition'),
    );
}

/** True for a CRD of the CSI snapshot API group (the cluster's, not the install's: see install-objects.ts). */
export function isSnapshotCrd(obj: KubeObject): boolean {
  return (
    obj.kind === 'CustomResourceDefinition' &&
    (obj.spec as { group?: string } | undefined)?.group === SNAPSHOT_STORAGE_GROUP
  );
}

/** snapshot-controller's rules (external-snapshotter's rbac-snapshot-controller.yaml, without group snapshots) and the nodes it reads for distributed snapshotting. */
export const snapshotControllerRules: Rule[] = [
  { apiGroups: [''], resources: ['persistentvolumes', 'nodes'], verbs: READ },
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'update'] },
  { apiGroups: [''], resources: ['events'], verbs: ['list', 'watch', 'create', 'update', 'patch'] },
  { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotclasses'], verbs: READ },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshotcontents'],
    verbs: ['create', 'get', 'list', 'watch', 'update', 'delete', 'patch'],
  },
  { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotcontents/status'], verbs: ['patch'] },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshots'],
    verbs: ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete'],
  },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshots/status'],
    verbs: ['update', 'patch'],
  },
];

/**
 * snapshot-controller's flags beside leader election (the install's and the cluster tests'
 * host process's), for a short guest freeze: an online VM snapshot keeps the guest frozen
 * until its VolumeSnapshots have a creation time, which this controller writes.
 * - Group snapshots off: the driver has none and their CRDs are not installed, and with
 *   the gate on (v8's default) the controller first polls for those CRDs with a backoff
 *   for `--retry-crd-interval-max` (30 s) before it syncs anything: a VolumeSnapshot made
 *   in that window waited for it (the first online VM snapshot after a start kept its guest
 *   frozen 15 s). external-snapshotter documents disabling the gate as the opt-out for
 *   clusters without those CRDs.
 * - The API client's rate as kube-controller-manager's (20 per second, bursts of 30), not
 *   client-go's 5 and 10: one VolumeSnapshot costs the controller about a dozen requests
 *   within 200 ms (finalizers, the content, status updates), so with a burst of 10 the last
 *   ones waited 100-200 ms each: 0.4 s of the 0.6 s from a VolumeSnapshot to its creation
 *   time on the cluster test, with the guest frozen throughout.
 */
export const SNAPSHOT_CONTROLLER_FLAGS = [
  '--feature-gates=CSIVolumeGroupSnapshot=false',
  '--kube-api-qps=20',
  '--kube-api-burst=30',
];

/** The snapshot-controller Deployment. */
export function snapshotControllerDeployment(o: InstallOptions): KubeObject {
  const labels = componentLabels(SNAPSHOT_CONTROLLER);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: SNAPSHOT_CONTROLLER, namespace: o.namespace, labels },
    spec: {
      replicas: o.snapshotControllerReplicas,
      selector: { matchLabels: { 'kubevirt.io': SNAPSHOT_CONTROLLER } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: SNAPSHOT_CONTROLLER,
          ...devClusterPodFields(o),
          containers: [
            {
              name: SNAPSHOT_CONTROLLER,
              image: o.image,
              imagePullPolicy: o.imagePullPolicy,
              command: [`/usr/bin/${SNAPSHOT_CONTROLLER}`],
              args: [
                '--v=2',
                '--leader-election=true',
                '--enable-distributed-snapshotting=true',
                ...SNAPSHOT_CONTROLLER_FLAGS,
              ],
              env: componentEnv(o),
              resources: { requests: { cpu: '5m', memory: '40Mi' } },
              securityContext: unprivilegedContainerSecurity(),
            },
          ],
        },
      },
    },
  } as KubeObject;
}

/** The whole storage stack: CRDs, node DaemonSet, snapshot-controller, CSIDriver, classes. */
export function storageObjects(o: InstallOptions, crdsDir: string): KubeObject[] {
  return [
    ...snapshotCrdObjects(crdsDir),
    ...csiNodeObjects(o),
    serviceAccount(SNAPSHOT_CONTROLLER, o.namespace),
    ...clusterRoleFor(SNAPSHOT_CONTROLLER, o.namespace, snapshotControllerRules),
    ...roleFor(SNAPSHOT_CONTROLLER, o.namespace, [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: [...READ, 'create', 'update', 'delete'],
      },
    ]),
    snapshotControllerDeployment(o),
    csiDriverObject() as KubeObject,
    storageClassObject() as KubeObject,
    volumeSnapshotClassObject() as KubeObject,
  ];
}
