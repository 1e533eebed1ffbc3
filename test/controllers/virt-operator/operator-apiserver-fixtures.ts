/**
 * Fixtures for the virt-operator test on a real kube-apiserver: the operator and the
 * KubeVirt CR it installs from, the workload controllers' part (rolled-out status), and
 * readers of what the operator wrote (the CA bundle, a certificate Secret, a version
 * annotation, the CRD's Established condition, an object gone).
 */
import { execFile } from 'node:child_process';
import { crdsDir } from '../../../scripts/gen-crds';
import type { KubeVirt } from '../../../src/api/generated/types';
import { NotFoundError } from '../../../src/controllers/runtime/errors';
import type { KubeClient } from '../../../src/controllers/runtime/kube/client';
import {
  ConfigMapType,
  CustomResourceDefinitionType,
  SecretType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject, ResourceType } from '../../../src/controllers/runtime/types';
import { VERSION_ANNOTATION } from '../../../src/controllers/virt-operator/bookkeeping';
import { VirtOperator } from '../../../src/controllers/virt-operator/operator';
import { DaemonSetType, DeploymentType } from '../../../src/controllers/virt-operator/resource-types';
import { kubectlPath } from '../../support/kube';

export type KV = KubeVirt & KubeObject;

/**
 * The KubeVirt CR `kubevirt` in `namespace`: short self-signed certificate lifetimes (so an
 * injected clock rotates them), infra and workload node placement, uninstall blocked by workloads.
 */
export function kubeVirtCr(namespace: string): KV {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'KubeVirt',
    metadata: { name: 'kubevirt', namespace },
    spec: {
      certificateRotateStrategy: {
        selfSigned: {
          ca: { duration: '2h', renewBefore: '1h' },
          server: { duration: '1h', renewBefore: '30m' },
        },
      },
      infra: { nodePlacement: { nodeSelector: { 'node-role.kubernetes.io/infra': '' } } },
      workloads: { nodePlacement: { nodeSelector: { 'kubevirt.io/workloads': 'true' } } },
      uninstallStrategy: 'BlockUninstallIfWorkloadsExist',
    },
  };
}

/**
 * A virt-operator in `namespace` on `client`: images localhost/kubevirt-ts at v1, the clock
 * `now` (a test moves it to rotate certificates), leader election in seconds (a standby
 * takes over quickly), its reconcile errors pushed onto `errors`.
 */
export function testOperator(
  client: KubeClient,
  namespace: string,
  now: () => Date,
  errors: string[],
): VirtOperator {
  return new VirtOperator({
    client,
    namespace,
    crdsDir,
    images: { registry: 'localhost/kubevirt-ts', tag: 'v1', pullPolicy: 'IfNotPresent' },
    now,
    leaderElection: { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 },
    onError: (n, e) => errors.push(`${n}: ${e.message}`),
  });
}

/**
 * Plays the workload controllers: every managed Deployment/DaemonSet (of `types`) in
 * `namespace` reports itself rolled out and ready.
 */
export async function markWorkloadsReady(
  client: KubeClient,
  namespace: string,
  types: ResourceType[] = [DeploymentType, DaemonSetType],
): Promise<void> {
  for (const type of types) {
    for (const o of (await client.list(type, { namespace })).items) {
      const gen = o.metadata?.generation ?? 1;
      const replicas = (o.spec as { replicas?: number }).replicas ?? 1;
      const status =
        type === DeploymentType
          ? {
              observedGeneration: gen,
              replicas,
              updatedReplicas: replicas,
              readyReplicas: replicas,
              availableReplicas: replicas,
            }
          : {
              observedGeneration: gen,
              desiredNumberScheduled: 1,
              currentNumberScheduled: 1,
              updatedNumberScheduled: 1,
              numberReady: 1,
              numberAvailable: 1,
              numberMisscheduled: 0,
            };
      await client.updateStatus(type, { ...o, status });
    }
  }
}

/**
 * kubectl on `kubeconfig`, asynchronously: the operator runs in the test's process, so a
 * kubectl that waits must not block its event loop.
 */
export function runKubectlAsync(
  kubeconfig: string,
  ...args: string[]
): Promise<{ status: number; stderr: string }> {
  return new Promise((resolve) =>
    execFile(kubectlPath, ['--kubeconfig', kubeconfig, ...args], (err, _out, stderr) =>
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    ),
  );
}

/** Whether the CRD `name` has its Established condition True. */
export async function crdEstablished(client: KubeClient, name: string): Promise<boolean | undefined> {
  const c = await client.get<KubeObject>(CustomResourceDefinitionType, name);
  const conds = (c.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions;
  return conds?.some((x) => x.type === 'Established' && x.status === 'True');
}

/** The CA bundle the ConfigMap `kubevirt-ca` in `namespace` publishes. */
export async function caBundle(client: KubeClient, namespace: string): Promise<string> {
  return (
    await client.get<KubeObject & { data: Record<string, string> }>(ConfigMapType, 'kubevirt-ca', namespace)
  ).data['ca-bundle']!;
}

/** The PEM certificate (`tls.crt`) of the Secret `name` in `namespace`. */
export async function tlsCert(client: KubeClient, name: string, namespace: string): Promise<string> {
  return Buffer.from(
    (await client.get<KubeObject & { data: Record<string, string> }>(SecretType, name, namespace)).data[
      'tls.crt'
    ]!,
    'base64',
  ).toString();
}

/** The CA bundle an APIService trusts, decoded. */
export const apiServiceBundle = (a: KubeObject) =>
  Buffer.from((a.spec as { caBundle: string }).caBundle, 'base64').toString();

/** The KubeVirt version the operator stamped on the object `name` of `type` in `namespace`. */
export async function versionOf(
  client: KubeClient,
  type: ResourceType,
  name: string,
  namespace: string,
): Promise<string | undefined> {
  return (await client.get<KubeObject>(type, name, namespace)).metadata?.annotations?.[VERSION_ANNOTATION];
}

/** Whether `get` fails with NotFound: false when it answers or fails otherwise. */
export async function isNotFound(get: Promise<unknown>): Promise<boolean> {
  try {
    await get;
    return false;
  } catch (e) {
    return e instanceof NotFoundError;
  }
}
