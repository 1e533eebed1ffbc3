/**
 * upstream's NewPodDisruptionBudgetForDeployment (virt-operator's components): a
 * `<deployment>-pdb` PodDisruptionBudget over the Deployment's pods with `minAvailable`
 * one less than its replicas, so a `kubectl drain` (an eviction) never takes the last
 * virt-api or virt-controller away; none for a Deployment of one replica (upstream
 * deletes it then).
 */
import type { KubeObject } from '../../runtime/types';

type DeploymentLike = KubeObject & {
  spec?: { replicas?: number; selector?: unknown };
};

/** The Deployment's PodDisruptionBudget, as a list of zero or one object. */
export function podDisruptionBudgetFor(deployment: KubeObject): KubeObject[] {
  const d = deployment as DeploymentLike;
  const minAvailable = (d.spec?.replicas ?? 1) - 1;
  if (minAvailable <= 0) return [];
  const name = `${d.metadata?.name}-pdb`;
  return [
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace: d.metadata?.namespace, labels: { 'kubevirt.io': name } },
      spec: { minAvailable, selector: structuredClone(d.spec?.selector) },
    } as KubeObject,
  ];
}
