/**
 * virt-api in the plain manifests (an install without virt-operator): virt-api's own
 * objects (./virt-api) without a caBundle, and `virt-certs`, a one-replica Deployment of
 * `kubevirt-ts virt-certs` that makes the certificates the operator would (upstream's
 * `kubevirt-ca` and leaf Secrets, renewed before they end) and patches the CA bundle into
 * virt-api's APIService and webhook configurations. virt-api and virt-handler wait for
 * their Secrets (required volumes), which virt-certs writes within seconds of starting.
 */
import type { KubeObject } from '../../runtime/types';
import {
  componentEnv,
  componentLabels,
  devClusterPodFields,
  type InstallOptions,
  nonRootPodSecurity,
  unprivilegedContainerSecurity,
} from './install-options';
import { clusterRoleFor, roleFor, serviceAccount } from './rbac';
import { virtApiComponents } from './virt-api';

/** virt-api's objects that carry the CA bundle (as ./virt-api names them). */
export const CA_BUNDLE_HOLDERS = {
  apiService: 'v1.subresources.kubevirt.io',
  uploadApiService: 'v1beta1.upload.cdi.kubevirt.io',
  mutating: 'virt-api-mutator',
  validating: 'virt-api-validator',
} as const;

const CERTS = 'virt-certs';

type PodSpec = { containers: Array<Record<string, unknown>> } & Record<string, unknown>;

/** The install's pull policy and dev-cluster fields on a Deployment virt-api.ts rendered bare. */
function withInstallFields(obj: Record<string, unknown>, o: InstallOptions): Record<string, unknown> {
  if (obj.kind !== 'Deployment') return obj;
  const spec = obj.spec as { template: { spec: PodSpec } };
  const pod = spec.template.spec;
  return {
    ...obj,
    spec: {
      ...spec,
      template: {
        ...spec.template,
        spec: {
          ...pod,
          ...devClusterPodFields(o),
          containers: pod.containers.map((c) => ({
            ...c,
            imagePullPolicy: o.imagePullPolicy,
            env: [...((c.env as unknown[]) ?? []), ...componentEnv(o)],
          })),
        },
      },
    },
  };
}

/** virt-certs: its account, what it may touch, and its Deployment. */
function virtCertsObjects(o: InstallOptions): KubeObject[] {
  const labels = componentLabels(CERTS);
  return [
    serviceAccount(CERTS, o.namespace),
    ...roleFor(CERTS, o.namespace, [
      { apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['get', 'create', 'update'] },
    ]),
    ...clusterRoleFor(CERTS, o.namespace, [
      {
        apiGroups: ['apiregistration.k8s.io'],
        resources: ['apiservices'],
        resourceNames: [CA_BUNDLE_HOLDERS.apiService, CA_BUNDLE_HOLDERS.uploadApiService],
        verbs: ['get', 'patch'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingwebhookconfigurations'],
        resourceNames: [CA_BUNDLE_HOLDERS.mutating],
        verbs: ['get', 'update'],
      },
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        resourceNames: [CA_BUNDLE_HOLDERS.validating],
        verbs: ['get', 'update'],
      },
    ]),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: CERTS, namespace: o.namespace, labels },
      spec: {
        replicas: 1,
        // Never two at once: each would renew the CA the other just wrote.
        strategy: { type: 'Recreate' },
        selector: { matchLabels: { 'kubevirt.io': CERTS } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: CERTS,
            ...devClusterPodFields(o),
            securityContext: nonRootPodSecurity(),
            containers: [
              {
                name: CERTS,
                image: o.image,
                imagePullPolicy: o.imagePullPolicy,
                command: ['kubevirt-ts', 'virt-certs', '--namespace', o.namespace],
                env: componentEnv(o),
                resources: { requests: { cpu: '5m', memory: '64Mi' } },
                securityContext: unprivilegedContainerSecurity(),
              },
            ],
          },
        },
      },
    } as KubeObject,
  ];
}

/** virt-api and virt-certs, for manifests/ (virt-handler must then serve its REST API: handlerServerCerts). */
export function plainVirtApiObjects(o: InstallOptions): KubeObject[] {
  const api = virtApiComponents({
    namespace: o.namespace,
    image: o.image,
    // On the host network (dev cluster) two virt-api pods cannot share a node's port.
    ...(o.devCluster ? { replicas: 1, exclusivePort: true } : {}),
  }).map((obj) => withInstallFields(obj, o));
  return [...virtCertsObjects(o), ...(api as KubeObject[])];
}
