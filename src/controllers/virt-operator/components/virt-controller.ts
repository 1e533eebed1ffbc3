/**
 * virt-controller's install objects: its ServiceAccount; a ClusterRole with what its
 * controllers read and write (upstream's virt-controller ClusterRole as reference,
 * trimmed to what these controllers use: launcher pods, the kubevirt.io workloads and
 * their status, claims, nodes, events); a Role for its leader Lease; and a Deployment
 * of `kubevirt-ts virt-controller` with two replicas, one leading, only the leader Ready.
 */
import type { KubeObject } from '../../runtime/types';
import { CONTROLLER_CERTS } from './cert-secrets';
import { podDisruptionBudgetFor } from './disruption-budget';
import {
  componentEnv,
  componentLabels,
  devClusterPodFields,
  type InstallOptions,
  nonRootPodSecurity,
  unprivilegedContainerSecurity,
} from './install-options';
import { certVolume, metricsContainerPort, metricsPort, PROMETHEUS_LABEL } from './metrics';
import { clusterRoleFor, type Rule, roleFor, serviceAccount } from './rbac';

const NAME = 'virt-controller';
/** Port of /healthz and /leader. */
export const VIRT_CONTROLLER_PORT = 8182;

const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const READ = ['get', 'list', 'watch'];

/** What virt-controller may do cluster-wide. */
export const virtControllerRules: Rule[] = [
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch', 'update'],
  },
  // The launcher pod's readiness-gate condition (kubevirt.io/virtual-machine-unpaused).
  { apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['nodes', 'namespaces'], verbs: READ },
  // CDI's DataVolume controller makes each DataVolume's claim (and annotates it).
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ALL },
  { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: READ },
  {
    apiGroups: ['cdi.kubevirt.io'],
    resources: ['datavolumes', 'datavolumes/status', 'storageprofiles', 'storageprofiles/status'],
    verbs: ALL,
  },
  { apiGroups: ['cdi.kubevirt.io'], resources: ['cdiconfigs', 'datasources'], verbs: READ },
  // CDI's config controller makes the CDIConfig `config` and sets its uploadProxyURL, from
  // an Ingress to cdi-uploadproxy when there is one.
  { apiGroups: ['cdi.kubevirt.io'], resources: ['cdiconfigs'], verbs: ['create'] },
  { apiGroups: ['cdi.kubevirt.io'], resources: ['cdiconfigs/status'], verbs: ['update', 'patch'] },
  { apiGroups: ['networking.k8s.io'], resources: ['ingresses'], verbs: READ },
  // CDI's DataSource controller writes their Ready condition.
  { apiGroups: ['cdi.kubevirt.io'], resources: ['datasources/status'], verbs: ['update', 'patch'] },
  // The node controller marks a node whose virt-handler stopped heartbeating unschedulable.
  { apiGroups: [''], resources: ['nodes'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
  {
    apiGroups: ['kubevirt.io'],
    resources: [
      'virtualmachines',
      'virtualmachines/status',
      'virtualmachines/finalizers',
      'virtualmachineinstances',
      'virtualmachineinstances/status',
      'virtualmachineinstances/finalizers',
      'virtualmachineinstancereplicasets',
      'virtualmachineinstancereplicasets/status',
      'virtualmachineinstancemigrations',
      'virtualmachineinstancemigrations/status',
    ],
    verbs: ALL,
  },
  { apiGroups: ['kubevirt.io'], resources: ['kubevirts'], verbs: READ },
  // The workload updater reports outdated VMIs in the CR's status and evicts their launchers.
  { apiGroups: ['kubevirt.io'], resources: ['kubevirts/status'], verbs: ['patch'] },
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  {
    apiGroups: ['pool.kubevirt.io'],
    resources: ['virtualmachinepools', 'virtualmachinepools/status'],
    verbs: ALL,
  },
  {
    apiGroups: ['instancetype.kubevirt.io'],
    resources: [
      'virtualmachineinstancetypes',
      'virtualmachineclusterinstancetypes',
      'virtualmachinepreferences',
      'virtualmachineclusterpreferences',
    ],
    verbs: READ,
  },
  // The instance type and preference copies a VM is expanded from (upstream's verbs).
  {
    apiGroups: ['apps'],
    resources: ['controllerrevisions'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
  },
  { apiGroups: ['migrations.kubevirt.io'], resources: ['migrationpolicies'], verbs: READ },
  // A VMI's multus networks must exist before its pod is made (upstream reads them too).
  { apiGroups: ['k8s.cni.cncf.io'], resources: ['network-attachment-definitions'], verbs: READ },
  // VM snapshots and restores: the snapshot.kubevirt.io kinds, CSI VolumeSnapshots of the
  // VMs' claims (their class found from the StorageClass), claims restored from them, and
  // the guest freeze/thaw through virt-api's subresources.
  {
    apiGroups: ['snapshot.kubevirt.io'],
    resources: [
      'virtualmachinesnapshots',
      'virtualmachinesnapshots/status',
      'virtualmachinesnapshotcontents',
      'virtualmachinesnapshotcontents/status',
      'virtualmachinerestores',
      'virtualmachinerestores/status',
    ],
    verbs: ALL,
  },
  // VM clones: a snapshot of the source and a restore to the target, both deleted when done.
  {
    apiGroups: ['clone.kubevirt.io'],
    resources: ['virtualmachineclones', 'virtualmachineclones/status'],
    verbs: ALL,
  },
  // VM exports: the export kind, and its exporter pod's Service, token and TLS Secrets and
  // manifest ConfigMap in the export's namespace, only created (owner references delete
  // them): no Secret there is read, listed or changed. The install CA it signs with, and an
  // export Ingress's TLS Secret, are read in its own namespace (the Role below).
  {
    apiGroups: ['export.kubevirt.io'],
    resources: ['virtualmachineexports', 'virtualmachineexports/status'],
    verbs: ALL,
  },
  { apiGroups: [''], resources: ['services', 'secrets', 'configmaps'], verbs: ['create'] },
  // CDI's upload controller: the upload pod's Service (watched by label) and certificate
  // Secret, deleted once the upload is done; no Secret is read.
  { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch', 'delete'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['delete'] },
  { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ALL },
  { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotclasses'], verbs: READ },
  { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: READ },
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['create', 'delete', 'patch', 'update'] },
  {
    apiGroups: ['subresources.kubevirt.io'],
    resources: ['virtualmachineinstances/freeze', 'virtualmachineinstances/unfreeze'],
    verbs: ['update'],
  },
];

/** Its leader Lease, in the install namespace only. */
export const virtControllerLeaseRules: Rule[] = [
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
  },
  // The install's CA, which signs the VM exporter pods' certificates (export-cert-issuer.ts).
  { apiGroups: [''], resources: ['secrets', 'configmaps'], resourceNames: ['kubevirt-ca'], verbs: ['get'] },
  // The TLS Secret an Ingress to virt-exportproxy names (the user's choice of name): its
  // certificate is the exports' `links.external.cert` (upstream's Role reads Secrets here too).
  { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
];

/** The command line of its container. */
export function virtControllerArgs(o: InstallOptions): string[] {
  const args = ['virt-controller', '--launcher-image', o.launcherImage, '--kubevirt-namespace', o.namespace];
  // On the host network two replicas cannot share a port: no health server there.
  args.push('--port', o.devCluster ? '0' : String(VIRT_CONTROLLER_PORT));
  // Metrics over HTTPS with its serving pair (upstream's 8443 on the pod network).
  args.push(
    '--metrics-listen',
    `0.0.0.0:${metricsPort(o, 'virt-controller')}`,
    '--tls-cert-file',
    `${CERTS_PATH}/tls.crt`,
    '--tls-key-file',
    `${CERTS_PATH}/tls.key`,
  );
  // On the host network the replica that finds the port taken serves once the other is gone.
  if (o.devCluster) args.push('--metrics-listen-retry', '5');
  return args;
}

/** Where its serving pair is mounted (upstream's path). */
const CERTS_PATH = '/etc/virt-controller/certificates';

/** The Deployment. */
export function virtControllerDeployment(o: InstallOptions): KubeObject {
  const labels = componentLabels(NAME);
  // Upstream's Secret, optional as upstream's: without it (the plain manifests) the
  // metrics server serves a self-signed pair.
  const certs = certVolume(CONTROLLER_CERTS, CONTROLLER_CERTS, CERTS_PATH, true);
  const metricsPorts = [metricsContainerPort(o, 'virt-controller')];
  // On the host network a declared port is a host port to the scheduler, which then
  // places one replica per node: the dev cluster declares none (so its Service lists no
  // virt-controller) and its replicas share the port at run time.
  const probes = o.devCluster
    ? {}
    : {
        ports: [{ name: 'health', containerPort: VIRT_CONTROLLER_PORT, protocol: 'TCP' }, ...metricsPorts],
        livenessProbe: {
          httpGet: { path: '/healthz', port: VIRT_CONTROLLER_PORT },
          initialDelaySeconds: 15,
          periodSeconds: 10,
        },
        readinessProbe: { httpGet: { path: '/leader', port: VIRT_CONTROLLER_PORT }, periodSeconds: 5 },
      };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: o.namespace, labels },
    spec: {
      replicas: o.controllerReplicas,
      selector: { matchLabels: { 'kubevirt.io': NAME } },
      // Both replicas stay up during a rollout; one leads at a time.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      template: {
        metadata: { labels: { ...labels, ...PROMETHEUS_LABEL } },
        spec: {
          serviceAccountName: NAME,
          priorityClassName: 'system-cluster-critical',
          ...devClusterPodFields(o),
          securityContext: nonRootPodSecurity(),
          containers: [
            {
              name: NAME,
              image: o.image,
              imagePullPolicy: o.imagePullPolicy,
              args: virtControllerArgs(o),
              env: componentEnv(o),
              ...probes,
              resources: { requests: { cpu: '10m', memory: '150Mi' } },
              securityContext: unprivilegedContainerSecurity(),
              volumeMounts: [certs.mount],
            },
          ],
          volumes: [certs.volume],
        },
      },
    },
  } as KubeObject;
}

/** Everything virt-controller needs. */
export function virtControllerObjects(o: InstallOptions): KubeObject[] {
  return [
    serviceAccount(NAME, o.namespace),
    ...clusterRoleFor(NAME, o.namespace, virtControllerRules),
    ...roleFor(NAME, o.namespace, virtControllerLeaseRules),
    virtControllerDeployment(o),
    ...podDisruptionBudgetFor(virtControllerDeployment(o)),
  ];
}
