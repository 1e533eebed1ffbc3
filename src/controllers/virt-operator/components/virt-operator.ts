/**
 * The operator manifest (`manifests/kubevirt-ts-operator.yaml`): the namespace, the
 * KubeVirt CRD, the operator's ServiceAccount and RBAC, and its Deployment (two replicas,
 * one holding the `virt-operator` Lease). Applying it, then a KubeVirt CR, installs the
 * rest. The operator creates every installed kind, and the ClusterRoles and bindings of
 * the components: Kubernetes lets it grant only what it holds, or with `escalate`/`bind`,
 * which it has on RBAC objects (as upstream's operator holds every permission it grants).
 */
import type { KubeObject } from '../../runtime/types';
import { crdObjects } from './crds';
import {
  componentEnv,
  componentLabels,
  devClusterPodFields,
  type InstallOptions,
  unprivilegedContainerSecurity,
} from './install-options';
import { namespaceObjects } from './namespace';
import { clusterRoleFor, type Rule, roleFor, serviceAccount } from './rbac';

const NAME = 'kubevirt-operator';
const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/** What the operator may do cluster-wide. */
export const virtOperatorRules: Rule[] = [
  {
    apiGroups: ['kubevirt.io'],
    resources: ['kubevirts'],
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
  },
  {
    apiGroups: ['kubevirt.io'],
    resources: ['kubevirts/status', 'kubevirts/finalizers'],
    verbs: ['get', 'update', 'patch'],
  },
  // BlockUninstallIfWorkloadsExist looks for VMIs.
  { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['list'] },
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ALL },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'],
    verbs: [...ALL, 'escalate', 'bind'],
  },
  {
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
    verbs: ALL,
  },
  { apiGroups: ['apiregistration.k8s.io'], resources: ['apiservices'], verbs: ALL },
  // virt-api's RoleBinding lives in kube-system.
  { apiGroups: [''], resources: ['serviceaccounts', 'services', 'secrets', 'configmaps'], verbs: ALL },
  { apiGroups: ['apps'], resources: ['deployments', 'daemonsets'], verbs: ALL },
  // virt-api's and virt-controller's PodDisruptionBudgets (disruption-budget.ts).
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ALL },
  // The storage stack (storage.ts): the CSI driver's objects and its snapshot class.
  { apiGroups: ['storage.k8s.io'], resources: ['csidrivers', 'storageclasses'], verbs: ALL },
  { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotclasses'], verbs: ALL },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
];

/** The operator manifest's objects. */
export function virtOperatorObjects(o: InstallOptions, crdsDir: string): KubeObject[] {
  const ns = o.namespace;
  const labels = componentLabels('virt-operator');
  return [
    ...namespaceObjects(o),
    ...crdObjects(crdsDir).filter((c) => c.metadata?.name === 'kubevirts.kubevirt.io'),
    serviceAccount(NAME, ns),
    ...clusterRoleFor(NAME, ns, virtOperatorRules),
    ...roleFor(NAME, ns, [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ALL }]),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'virt-operator', namespace: ns, labels },
      spec: {
        replicas: 2,
        selector: { matchLabels: { 'kubevirt.io': 'virt-operator' } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: NAME,
            ...devClusterPodFields(o),
            containers: [
              {
                name: 'virt-operator',
                image: o.image,
                imagePullPolicy: o.imagePullPolicy,
                command: ['kubevirt-ts', 'virt-operator'],
                args: [
                  '--namespace',
                  ns,
                  '--image-registry',
                  o.image.replace(/\/[^/]*$/, ''),
                  '--image-tag',
                  o.image.includes(':') ? o.image.replace(/^.*:/, '') : 'latest',
                  '--image-pull-policy',
                  o.imagePullPolicy,
                  ...(o.devCluster
                    ? ['--dev-cluster-apiserver-port', String(o.devCluster.apiServerPort)]
                    : []),
                  ...(o.kubeletRootDir !== '/var/lib/kubelet'
                    ? ['--kubelet-root-dir', o.kubeletRootDir]
                    : []),
                  ...(o.csiPoolDir ? ['--csi-pool-dir', o.csiPoolDir] : []),
                  ...(o.csiPoolSize !== '50Gi' ? ['--csi-pool-size', o.csiPoolSize] : []),
                ],
                env: componentEnv(o),
                resources: { requests: { cpu: '10m', memory: '150Mi' } },
                securityContext: unprivilegedContainerSecurity(),
              },
            ],
          },
        },
      },
    } as KubeObject,
  ];
}
