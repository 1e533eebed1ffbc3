/**
 * virt-handler's install objects: its ServiceAccount, a ClusterRole with what the node
 * agent reads and writes (VMIs on its node and their status, launcher pods, its Node,
 * migrations, events), and a DaemonSet of `kubevirt-ts virt-handler --device-plugins`
 * on every node: privileged, because it reads launcher sockets in the kubelet's pods
 * directory, serves the kubelet's device plugins and gives non-root VMIs their files;
 * launcher pods themselves stay unprivileged.
 */
import type { KubeObject } from '../../runtime/types';
import { HANDLER_SERVER_CERTS } from './cert-secrets';
import { componentEnv, componentLabels, devClusterPodFields, type InstallOptions } from './install-options';
import { certVolume, metricsContainerPort, metricsPort, PROMETHEUS_LABEL } from './metrics';
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
  // update: a migration target's handler publishes its launcher's domain XML on the
  // target pod (annotation kubevirt-ts.io/migration-target-domain) for the source.
  { apiGroups: [''], resources: ['pods'], verbs: [...READ, 'update'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch', 'update'] },
  // Heartbeat and device resources where no device plugin reports them (node-registrar.ts).
  { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch', 'update'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
];

/** Host directories the DaemonSet mounts at the same paths. */
function hostDirs(o: InstallOptions): Array<{ name: string; path: string; propagation?: string }> {
  return [
    // Launcher sockets: <pods>/<uid>/volumes/kubernetes.io~empty-dir/sockets/launcher-sock.
    // Bidirectional, as upstream's: the disks of hotplugged volumes the handler bind-mounts
    // into a launcher pod's hotplug-disks emptyDir must reach the host (and from there the pod).
    { name: 'kubelet-pods', path: `${o.kubeletRootDir}/pods`, propagation: 'Bidirectional' },
    // Fixed in the kubelet, whatever its --root-dir.
    { name: 'device-plugins', path: '/var/lib/kubelet/device-plugins' },
    // The kubelet's seccomp profiles: the handler installs kubevirt/kubevirt.json there.
    { name: 'kubelet-seccomp', path: `${o.kubeletRootDir}/seccomp` },
    // The handler's notify socket and per-node state.
    { name: 'virt-share-dir', path: '/var/run/kubevirt' },
  ];
}

/**
 * The host's cgroup mount, where the handler allows a hotplugged block device in a
 * launcher's devices cgroup (virt-handler/device-cgroup.ts). Upstream reaches it through
 * `/proc/1/root`; on hosts where PID 1's root is closed even to root (the project's test
 * machines), that fails, so the manifests mount it.
 */
const HOST_CGROUP = {
  name: 'host-cgroup',
  hostPath: '/sys/fs/cgroup',
  mountPath: '/var/run/kubevirt-host-cgroup',
};

/** The command line of its container (NODE_NAME from the downward API). */
export function virtHandlerArgs(o: InstallOptions): string[] {
  return [
    'virt-handler',
    '--node-name',
    '$(NODE_NAME)',
    '--pods-root',
    `${o.kubeletRootDir}/pods`,
    '--device-plugins',
    '--seccomp-dir',
    `${o.kubeletRootDir}/seccomp`,
    '--cgroup-root',
    HOST_CGROUP.mountPath,
    '--driver',
    'emulation',
    '--libvirt-uri',
    'qemu:///session',
    '--libvirt-socket',
    PROBE_LIBVIRT_SOCKET,
    '--kubevirt-namespace',
    o.namespace,
    // Metrics over HTTPS with the serving pair (upstream's 8443 on the pod network).
    '--metrics-listen',
    `0.0.0.0:${metricsPort(o, 'virt-handler')}`,
    '--tls-cert-file',
    `${SERVER_CERTS_PATH}/tls.crt`,
    '--tls-key-file',
    `${SERVER_CERTS_PATH}/tls.key`,
    // The REST server for virt-api only with the operator's Secret (it needs the CA);
    // with it, the migration proxy too (upstream's --pod-ip-address and client pair).
    ...(o.handlerServerCerts
      ? [
          '--kubevirt-ca',
          `${SERVER_CERTS_PATH}/ca.crt`,
          '--pod-ip-address',
          '$(MY_POD_IP)',
          '--migration-client-cert-file',
          `${CLIENT_CERTS_PATH}/tls.crt`,
          '--migration-client-key-file',
          `${CLIENT_CERTS_PATH}/tls.key`,
        ]
      : []),
    // As upstream's operator (setMaxDevices): only when the KubeVirt CR sets it.
    ...(o.handlerMaxDevices !== undefined ? ['--max-devices', String(o.handlerMaxDevices)] : []),
  ];
}

/** Where the handler's client pair (`kubevirt-virt-handler-certs`) is mounted: the migration proxy presents it. */
const CLIENT_CERTS_PATH = '/etc/virt-handler/clientcertificates';
/** The operator's (and virt-certs') client Secret, which virt-api mounts too. */
const HANDLER_CLIENT_CERTS = 'kubevirt-virt-handler-certs';

/** Where the handler's serving certificates are mounted. */
const SERVER_CERTS_PATH = '/etc/virt-handler/servercertificates';

/**
 * The serving pair's Secret: the operator's (required: its REST server reads it at
 * start), else upstream's name mounted optional (the plain manifests make no Secret, so
 * the metrics server serves a self-signed pair until one exists).
 */
function serverCerts(o: InstallOptions) {
  return certVolume(
    'kubevirt-virt-handler-server-certs',
    o.handlerServerCerts ?? HANDLER_SERVER_CERTS,
    SERVER_CERTS_PATH,
    !o.handlerServerCerts,
  );
}

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
  const certs = serverCerts(o);
  // The client pair only where the operator (or virt-certs) makes the Secrets.
  const client = o.handlerServerCerts
    ? certVolume(HANDLER_CLIENT_CERTS, HANDLER_CLIENT_CERTS, CLIENT_CERTS_PATH, false)
    : undefined;
  const port = metricsPort(o, 'virt-handler');
  // Upstream's probes on the metrics port (HTTPS; the kubelet does not verify it).
  const probe = (path: string, periodSeconds: number) => ({
    httpGet: { scheme: 'HTTPS', port, path },
    initialDelaySeconds: 15,
    timeoutSeconds: 10,
    periodSeconds,
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: NAME, namespace: o.namespace, labels },
    spec: {
      selector: { matchLabels: { 'kubevirt.io': NAME } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: { ...labels, ...PROMETHEUS_LABEL } },
        spec: {
          serviceAccountName: NAME,
          // The kubelet's projected token is bound to this pod and carries its node's name,
          // which virt-api's node restriction checks (virt-api/node-restriction.ts).
          automountServiceAccountToken: true,
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
                // The migration proxy's address (upstream's MY_POD_IP).
                { name: 'MY_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                ...componentEnv(o),
              ],
              ports: [metricsContainerPort(o, 'virt-handler')],
              livenessProbe: { ...probe('/healthz', 45), failureThreshold: 3 },
              readinessProbe: probe('/readyz', 20),
              securityContext: { privileged: true },
              resources: { requests: { cpu: '10m', memory: '230Mi' } },
              volumeMounts: [
                ...hostDirs(o).map((d) => ({
                  name: d.name,
                  mountPath: d.path,
                  ...(d.propagation ? { mountPropagation: d.propagation } : {}),
                })),
                { name: HOST_CGROUP.name, mountPath: HOST_CGROUP.mountPath },
                PROBE_RUN_MOUNT,
                certs.mount,
                ...(client ? [client.mount] : []),
              ],
            },
            probeLibvirtContainer(o),
          ],
          volumes: [
            ...hostDirs(o).map((d) => ({
              name: d.name,
              hostPath: { path: d.path, type: 'DirectoryOrCreate' },
            })),
            { name: HOST_CGROUP.name, hostPath: { path: HOST_CGROUP.hostPath, type: 'Directory' } },
            { name: PROBE_RUN_MOUNT.name, emptyDir: {} },
            certs.volume,
            ...(client ? [client.volume] : []),
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
