/**
 * The storage stack's node part: the CSI driver `csi.kubevirt-ts.io` with csi-provisioner
 * and csi-snapshotter beside it on every node, in the shape of csi-driver-host-path's
 * `deploy/kubernetes-distributed` (its provisioner on each node with `--node-deployment`):
 * the pool is the node's own storage and one driver process serves it (its per-volume
 * locks are in the process, and a start empties the pool's `tmp/`), so the sidecars that
 * call CreateVolume and CreateSnapshot must run beside that process, not in a Deployment
 * elsewhere. The driver registers itself with the kubelet (no node-driver-registrar).
 * Privileged: it binds loop devices (`/dev`) and mounts volumes into the kubelet's
 * directories, which reach the kubelet through Bidirectional propagation; the pool's own
 * loop mount lives in the kubelet's plugins directory for the same reason, so a restarted
 * driver finds it mounted.
 */
import { DRIVER_NAME } from '../../common/csi-objects';
import type { KubeObject } from '../../runtime/types';
import { componentEnv, componentLabels, devClusterPodFields, type InstallOptions } from './install-options';
import { clusterRoleFor, type Rule, roleFor, serviceAccount } from './rbac';

export const CSI_NODE_NAME = 'kubevirt-ts-csi-node';
const READ = ['get', 'list', 'watch'];
const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** The driver's own directory under the kubelet's plugins/: its socket, and the pool by default. */
export function csiPluginDir(o: InstallOptions): string {
  return `${o.kubeletRootDir}/plugins/${DRIVER_NAME}`;
}

/** The pool's mount point and image on each node. */
export function csiPool(o: InstallOptions): { dir: string; image: string; size: string } {
  const dir = o.csiPoolDir ?? `${csiPluginDir(o)}/pool`;
  return { dir, image: `${dir}.img`, size: o.csiPoolSize };
}

/** external-provisioner's and external-snapshotter's rules (their deploy/kubernetes RBAC), for the node's sidecars. */
export const csiNodeRules: Rule[] = [
  // csi-provisioner
  {
    apiGroups: [''],
    resources: ['persistentvolumes'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'update'] },
  {
    apiGroups: ['storage.k8s.io'],
    resources: ['storageclasses', 'csinodes', 'volumeattachments'],
    verbs: READ,
  },
  { apiGroups: [''], resources: ['events'], verbs: ['list', 'watch', 'create', 'update', 'patch'] },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshots'],
    verbs: ['get', 'list', 'watch', 'update'],
  },
  { apiGroups: [''], resources: ['nodes'], verbs: READ },
  // csi-snapshotter
  { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotclasses'], verbs: READ },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshotcontents'],
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
  },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshotcontents/status'],
    verbs: ['update', 'patch'],
  },
];

/** The provisioner's namespaced rules (its owner lookups; leases when it elects). */
const csiNodeNamespacedRules: Rule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ALL },
  { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
  { apiGroups: ['apps'], resources: ['replicasets', 'daemonsets'], verbs: ['get'] },
];

const SOCKET_DIR = '/csi';
const nodeNameEnv = { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } };

/** The node DaemonSet. */
export function csiNodeDaemonSet(o: InstallOptions): KubeObject {
  const labels = componentLabels(CSI_NODE_NAME);
  const plugin = csiPluginDir(o);
  const pool = csiPool(o);
  const socket = `unix://${SOCKET_DIR}/csi.sock`;
  const sidecar = (name: string, args: string[]) => ({
    name,
    image: o.image,
    imagePullPolicy: o.imagePullPolicy,
    command: [`/usr/bin/${name}`],
    args: [`--csi-address=${SOCKET_DIR}/csi.sock`, '--timeout=60s', '--v=2', ...args],
    env: [nodeNameEnv, ...componentEnv(o)],
    resources: { requests: { cpu: '5m', memory: '40Mi' } },
    volumeMounts: [{ name: 'socket-dir', mountPath: SOCKET_DIR }],
  });
  const hostDirs = [
    // The driver's socket, and the pool (image and mount point) unless placed elsewhere.
    { name: 'socket-dir', path: plugin, mountPath: SOCKET_DIR },
    { name: 'plugins-dir', path: `${o.kubeletRootDir}/plugins`, bidirectional: true },
    { name: 'mountpoint-dir', path: `${o.kubeletRootDir}/pods`, bidirectional: true },
    { name: 'registration-dir', path: `${o.kubeletRootDir}/plugins_registry` },
    { name: 'dev-dir', path: '/dev' },
    ...(o.csiPoolDir
      ? [{ name: 'pool-dir', path: o.csiPoolDir.replace(/\/[^/]+$/, '') || '/', bidirectional: true }]
      : []),
  ];
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: CSI_NODE_NAME, namespace: o.namespace, labels },
    spec: {
      selector: { matchLabels: { 'kubevirt.io': CSI_NODE_NAME } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: CSI_NODE_NAME,
          priorityClassName: 'system-node-critical',
          ...devClusterPodFields(o),
          containers: [
            {
              name: 'csi-driver',
              image: o.image,
              imagePullPolicy: o.imagePullPolicy,
              args: [
                'csi-driver',
                '--endpoint',
                socket,
                '--node-id',
                '$(NODE_NAME)',
                '--pool-dir',
                pool.dir,
                '--pool-image',
                pool.image,
                '--pool-size',
                pool.size,
                '--registration-dir',
                `${o.kubeletRootDir}/plugins_registry`,
                '--kubelet-registration-path',
                `${plugin}/csi.sock`,
              ],
              env: [nodeNameEnv, ...componentEnv(o)],
              // Ready once it serves its socket (the pool mounted and checked before that).
              readinessProbe: {
                exec: { command: ['test', '-S', `${SOCKET_DIR}/csi.sock`] },
                periodSeconds: 5,
              },
              securityContext: { privileged: true },
              resources: { requests: { cpu: '10m', memory: '80Mi' } },
              volumeMounts: hostDirs.map((d) => ({
                name: d.name,
                mountPath: d.mountPath ?? d.path,
                ...(d.bidirectional ? { mountPropagation: 'Bidirectional' } : {}),
              })),
            },
            // Each node provisions its own volumes: the PVC's selected node is this one.
            sidecar('csi-provisioner', [
              '--node-deployment=true',
              '--strict-topology=true',
              '--immediate-topology=false',
              '--feature-gates=Topology=true',
            ]),
            // Snapshots of the volumes on this node (snapshot-controller labels their contents).
            sidecar('csi-snapshotter', ['--node-deployment=true']),
          ],
          volumes: hostDirs.map((d) => ({
            name: d.name,
            hostPath: { path: d.path, type: d.name === 'dev-dir' ? 'Directory' : 'DirectoryOrCreate' },
          })),
        },
      },
    },
  } as KubeObject;
}

/** Everything on the nodes: ServiceAccount, RBAC and the DaemonSet. */
export function csiNodeObjects(o: InstallOptions): KubeObject[] {
  return [
    serviceAccount(CSI_NODE_NAME, o.namespace),
    ...clusterRoleFor(CSI_NODE_NAME, o.namespace, csiNodeRules),
    ...roleFor(CSI_NODE_NAME, o.namespace, csiNodeNamespacedRules),
    csiNodeDaemonSet(o),
  ];
}
