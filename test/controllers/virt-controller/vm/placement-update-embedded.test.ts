/**
 * Node selector, affinity and tolerations live-updated through the VM controller on the
 * embedded store (upstream's handleAffinityChangeRequest / handleTolerationsChangeRequest
 * under LiveUpdate): a running VM's template edit reaches its VMI without RestartRequired
 * and the running launcher pod is left as it was (its next pod is rendered from the VMI);
 * another field changed beside them still needs a restart; under the Stage rollout the
 * same edit is RestartRequired and the VMI is left alone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { PodType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const toleration = { key: 'dedicated', operator: 'Equal', value: 'vms', effect: 'NoSchedule' } as const;
const affinity = {
  nodeAffinity: {
    preferredDuringSchedulingIgnoredDuringExecution: [
      {
        weight: 10,
        preference: { matchExpressions: [{ key: 'zone', operator: 'In' as const, values: ['b'] }] },
      },
    ],
  },
};

describe('node selector, affinity and tolerations live update (embedded)', () => {
  let h: Harness;
  afterEach(async () => {
    await h.stop();
  });
  const getVm = () => h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'place', 'default');
  const getVmi = () => h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'place', 'default');
  const launcher = async () =>
    (await h.store.list<Pod & KubeObject>(PodType, { namespace: 'default' })).items.find(
      (p) => p.metadata?.labels?.['kubevirt.io'] === 'virt-launcher',
    );
  const editTemplate = (
    what: string,
    f: (spec: NonNullable<VirtualMachine['spec']['template']['spec']>) => void,
  ) =>
    waitFor(what, async () => {
      const vm = await getVm();
      f(vm.spec.template.spec!);
      await h.store.update(VirtualMachineType, vm as KubeObject);
      return true;
    });
  const restartRequired = async () =>
    (await getVm()).status?.conditions?.find((c) => c.type === 'RestartRequired');
  const startVm = async () => {
    await h.store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'place', namespace: 'default' },
      spec: {
        runStrategy: 'Always',
        template: {
          spec: {
            nodeSelector: { disk: 'hdd' },
            domain: { devices: {}, resources: { requests: { memory: '64Mi' } } },
          },
        },
      },
    } as KubeObject);
    return waitFor('the VMI Running', async () => {
      const v = await getVmi().catch(() => undefined);
      return v?.status?.phase === 'Running' ? v : undefined;
    });
  };

  it('patches the running VMI, leaves its pod, no RestartRequired; another field still needs a restart', async () => {
    h = await startHarness({ sim: { nodeNames: ['node01'] } });
    await startVm();
    const pod = await launcher();
    expect(pod?.spec?.nodeSelector).toMatchObject({ disk: 'hdd' });
    await editTemplate('placement edited', (spec) => {
      spec.nodeSelector = { disk: 'ssd' };
      spec.affinity = affinity;
      spec.tolerations = [toleration];
    });
    const patched = await waitFor('the VMI with the new placement', async () => {
      const v = await getVmi();
      return v.spec.nodeSelector?.disk === 'ssd' && v.spec.tolerations?.length ? v : undefined;
    });
    expect(patched.spec.affinity).toEqual(affinity);
    expect(patched.spec.tolerations).toEqual([toleration]);
    expect(patched.status?.phase).toBe('Running');
    // The controller patches only a VM it found needs no restart.
    expect(await restartRequired()).toBeUndefined();
    const same = await launcher();
    expect(same?.metadata?.uid).toBe(pod?.metadata?.uid);
    expect(same?.spec?.nodeSelector).toMatchObject({ disk: 'hdd' });

    // Dropping them removes them from the VMI.
    await editTemplate('placement dropped', (spec) => {
      delete spec.nodeSelector;
      delete spec.affinity;
      delete spec.tolerations;
    });
    await waitFor('the VMI without placement', async () => {
      const v = await getVmi();
      return !v.spec.nodeSelector && !v.spec.affinity && !v.spec.tolerations ? true : undefined;
    });
    expect(await restartRequired()).toBeUndefined();

    // A field that is not live-updatable beside them: RestartRequired.
    await editTemplate('hostname and selector edited', (spec) => {
      spec.nodeSelector = { disk: 'nvme' };
      spec.hostname = 'elsewhere';
    });
    const restart = await waitFor('RestartRequired', restartRequired);
    expect(restart).toMatchObject({
      status: 'True',
      message: 'a non-live-updatable field was changed in the template spec',
    });
  });

  it('under the Stage rollout the same edit is RestartRequired and the VMI keeps its placement', async () => {
    h = await startHarness({ sim: { nodeNames: ['node01'] }, configuration: { vmRolloutStrategy: 'Stage' } });
    await startVm();
    await editTemplate('tolerations edited', (spec) => {
      spec.tolerations = [toleration];
    });
    expect(await waitFor('RestartRequired', restartRequired)).toMatchObject({ status: 'True' });
    expect((await getVmi()).spec.tolerations).toBeUndefined();
  });
});
