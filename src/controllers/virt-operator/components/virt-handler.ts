/**
 * virt-handler's install objects: its ServiceAccount, a ClusterRole with what the node
 * agent reads and writes (VMIs on its node and their status, launcher pods, its Node,
 * migrations, events), and a DaemonSet of `kubevirt-ts virt-handler --device-plugins`
 * on every node: privileged, because it reads launcher sockets in the kubelet's pods
 * directory, serves the kubelet's device plugins and gives non-root VMIs their files;
 * launcher pods themselves stay unprivileged.
 */
import type { KubeObject } from '../../runtime/types';
import { componentEnv, componentLabels, devClusterPodFields, type InstallOptions } from './install-options';
import { clusterRoleFor, type Rule, serviceAccount } from './rbac';

const NAME = 'virt-handler';
const READ = ['get', 'list', 'watch'];

/** What virt-handler may do cluster-wide. */
export const virtHandlerRules: Rule[] = [
  {
    apiGroups: ['kubevirt.io'],
    resources: ['virtualmachineinstances', 'virtualmachineinstances/status'],
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
  },
  {
    apiGroups: ['kubevirt.io'],
    resources: ['virtualmachineinstancemigrations', 'virtualmachineinstancemigrations/status'],
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
  },
  { apiGroups: ['kubevirt.io'], resources: ['kubevirts'], verbs: READ },
  { apiGroups: ['migrations.kubevirt.io'], resources: ['migrationpolicies'], verbs: READ },
  { apiGroups: [''], resources: ['pods'], verbs: READ },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch', 'update'] },
  // Heartbeat and device resources where no device plugin reports them (node-registrar.ts).
  { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch', 'update'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
];

/** Host directories the DaemonSet mounts at the same paths. */
function hostDirs(o: InstallOptions): Array<{ name: string; path: string; propagation?: string }> {
  return [
    // Launcher sockets: <pods>/<uid>/volumes/kubernetes.io~empty-dir/sockets/launcher-sock.
    { name: 'kubelet-pods', path: `${o.kubeletRootDir}/pods`, propagation: 'HostToContainer' },
    // Fixed in the kubelet, whatever its --root-dir.
    { name: 'device-plugins', path: '/var/lib/kubelet/device-plugins' },
    // The handler's notify socket and per-node state.
    { name: 'virt-share-dir', path: '/var/run/kubevirt' },
  ];
}

/** The command line of its container (NODE_NAME from the downward API). */
export function virtHandlerArgs(o: InstallOptions): string[] {
  return [
    'virt-handler',
    '--node-name',
    '$(NODE_NAME)',
    '--pods-root',
    `${o.kubeletRootDir}/pods`,
    '--device-plugins',
    '--driver',
    'emulation',
    '--libvirt-uri',
    'qemu:///session',
    '--libvirt-socket',
    PROBE_LIBVIRT_SOCKET,
    '--kubevirt-namespace',
    o.namespace,
    ...(o.handlerServerCerts
      ? [
          '--tls-cert-file',
          `${SERVER_CERTS_MOUNT.mountPath}/tls.crt`,
          '--tls-key-file',
          `${SERVER_CERTS_MOUNT.mountPath}/tls.key`,
          '--kubevirt-ca',
          `${SERVER_CERTS_MOUNT.mountPath}/ca.crt`,
        ]
      : []),
  ];
}

/** Where the handler's serving certificates are mounted (with `handlerServerCerts`). */
const SERVER_CERTS_MOUNT = {
  name: 'kubevirt-virt-handler-server-certs',
  mountPath: '/etc/virt-handler/servercertificates',
  readOnly: true,
};

/** The probe daemon's runtime directory (an emptyDir both containers of the pod mount). */
const PROBE_RUN_MOUNT = { name: 'libvirt-probe', mountPath: '/var/run/kubevirt-libvirt-probe' };
/** Its socket there (session mode: `$XDG_RUNTIME_DIR/libvirt/libvirt-sock`). */
export const PROBE_LIBVIRT_SOCKET = `${PROBE_RUN_MOUNT.mountPath}/run/libvirt/libvirt-sock`;

/**
 * The handler probes the host (CPU models, machine types, KVM, emulation) through libvirt.
 * The components image has no libvirt and a node need not run one (upstream's handler
 * has none on the host either: its node-labeller asks a libvirtd from the launcher
 * image): this sidecar runs the launcher image's libvirtd in the handler's pod the way a
 * launcher runs its own, in session mode as the qemu user (107), unprivileged, every
 * socket and state file in an emptyDir the handler mounts too. No guest runs there.
 */
function probeLibvirtContainer(o: InstallOptions): Record<string, unknown> {
  const dir = PROBE_RUN_MOUNT.mountPath;
  return {
    name: 'virt-handler-libvirt',
    image: o.launcherImage,
    imagePullPolicy: o.imagePullPolicy,
    command: ['/usr/sbin/libvirtd'],
    env: [
      { name: 'HOME', value: dir },
      { name: 'XDG_RUNTIME_DIR', value: `${dir}/run` },
      { name: 'XDG_CONFIG_HOME', value: `${dir}/config` },
      { name: 'XDG_CACHE_HOME', value: `${dir}/cache` },
    ],
    securityContext: {
      privileged: false,
      runAsUser: 107,
      runAsGroup: 107,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    },
    resources: { requests: { cpu: '5m', memory: '60Mi' } },
    volumeMounts: [PROBE_RUN_MOUNT],
  };
}

/** The DaemonSet. */
export function virtHandlerDaemonSet(o: InstallOptions): KubeObject {
  const labels = componentLabels(NAME);
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: NAME, namespace: o.namespace, labels },
    spec: {
      selector: { matchLabels: { 'kubevirt.io': NAME } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: NAME,
          priorityClassName: 'system-node-critical',
          ...devClusterPodFields(o),
          hostPID: true,
          containers: [
            {
              name: NAME,
              image: o.image,
              imagePullPolicy: o.imagePullPolicy,
              args: virtHandlerArgs(o),
              env: [
                { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                ...componentEnv(o),
              ],
              securityContext: { privileged: true },
              resources: { requests: { cpu: '10m', memory: '230Mi' } },
              volumeMounts: [
                ...hostDirs(o).map((d) => ({
                  name: d.name,
                  mountPath: d.path,
                  ...(d.propagation ? { mountPropagation: d.propagation } : {}),
                })),
                PROBE_RUN_MOUNT,
                ...(o.handlerServerCerts ? [SERVER_CERTS_MOUNT] : []),
              ],
            },
            probeLibvirtContainer(o),
          ],
          volumes: [
            ...hostDirs(o).map((d) => ({
              name: d.name,
              hostPath: { path: d.path, type: 'DirectoryOrCreate' },
            })),
            { name: PROBE_RUN_MOUNT.name, emptyDir: {} },
            ...(o.handlerServerCerts
              ? [{ name: SERVER_CERTS_MOUNT.name, secret: { secretName: o.handlerServerCerts } }]
              : []),
          ],
        },
      },
    },
  } as KubeObject;
}

/** Everything virt-handler needs. */
export function virtHandlerObjects(o: InstallOptions): KubeObject[] {
  return [
    serviceAccount(NAME, o.namespace),
    ...clusterRoleFor(NAME, o.namespace, virtHandlerRules),
    virtHandlerDaemonSet(o),
  ];
}
