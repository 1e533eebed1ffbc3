import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { podDisruptionBudgetFor } from '../../../src/controllers/virt-operator/components/disruption-budget';
import { defaultInstallOptions } from '../../../src/controllers/virt-operator/components/index';
import { virtControllerObjects } from '../../../src/controllers/virt-operator/components/virt-controller';

const deployment = (replicas: number) =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'virt-api', namespace: 'kubevirt' },
    spec: { replicas, selector: { matchLabels: { 'kubevirt.io': 'virt-api' } } },
  }) as KubeObject;

describe("podDisruptionBudgetFor (upstream's NewPodDisruptionBudgetForDeployment)", () => {
  it('keeps all but one replica: minAvailable = replicas - 1, the Deployment selector', () => {
    expect(podDisruptionBudgetFor(deployment(3))).toEqual([
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'virt-api-pdb', namespace: 'kubevirt', labels: { 'kubevirt.io': 'virt-api-pdb' } },
        spec: { minAvailable: 2, selector: { matchLabels: { 'kubevirt.io': 'virt-api' } } },
      },
    ]);
  });

  it('none for one replica (upstream deletes it then)', () => {
    expect(podDisruptionBudgetFor(deployment(1))).toEqual([]);
  });

  it("virt-controller's objects carry its budget", () => {
    const objs = virtControllerObjects(defaultInstallOptions());
    const pdb = objs.find((o) => o.kind === 'PodDisruptionBudget') as KubeObject & {
      spec: { minAvailable: number };
    };
    expect(pdb.metadata?.name).toBe('virt-controller-pdb');
    expect(pdb.spec.minAvailable).toBe(1);
  });
});
