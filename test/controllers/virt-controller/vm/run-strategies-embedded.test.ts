import { afterEach, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { NotFoundError } from '../../../../src/controllers/runtime/errors';
import { EventType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import type { NodeSimulatorOptions } from '../../../support/node-simulator';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

function vm(name: string, spec: Partial<VirtualMachine['spec']>): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace: 'default' },
    spec: {
      template: {
        metadata: { labels: { 'kubevirt.io/vm': name } },
        spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
      },
      ...spec,
    },
  };
}

describe('run strategies and transitions on the embedded store', () => {
  let h: Harness;
  afterEach(async () => {
    await h.stop();
  });
  const start = async (sim?: NodeSimulatorOptions) => {
    h = await startHarness({ sim });
  };
  const getVm = (n: string) => h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, n, 'default');
  const getVmi = (n: string) => h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, n, 'default');
  const vmiGone = async (n: string) => {
    try {
      await getVmi(n);
      return false;
    } catch (err) {
      return err instanceof NotFoundError;
    }
  };
  const printable = (n: string, s: string) =>
    waitFor(`${n} ${s}`, async () => {
      const x = await getVm(n);
      return x.status?.printableStatus === s ? x : undefined;
    });
  const requestState = async (n: string, reqs: Array<{ action: string; uid?: string }>) => {
    const cur = await getVm(n);
    await h.store.updateStatus(VirtualMachineType, {
      ...cur,
      status: { ...cur.status, stateChangeRequests: reqs },
    } as KubeObject);
  };

  it('Manual: nothing until a start request; a stop request stops it', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('man', { runStrategy: 'Manual' }) as KubeObject);
    await printable('man', 'Stopped');
    expect(await vmiGone('man')).toBe(true);
    await requestState('man', [{ action: 'Start' }]);
    await printable('man', 'Running');
    const vmi = await getVmi('man');
    await requestState('man', [{ action: 'Stop', uid: vmi.metadata!.uid }]);
    await waitFor('VMI gone', () => vmiGone('man'));
    const v = await printable('man', 'Stopped');
    expect(v.status!.stateChangeRequests).toBeUndefined();
  });

  it('Once: runs once, and a finished VMI is not restarted', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('once', { runStrategy: 'Once' }) as KubeObject);
    await printable('once', 'Running');
    const vmi = await getVmi('once');
    await h.store.update(VmiResource, {
      ...vmi,
      status: { ...vmi.status, phase: 'Succeeded' },
    } as KubeObject);
    await printable('once', 'Stopped');
    expect((await getVmi('once')).metadata!.uid).toBe(vmi.metadata!.uid);
  });

  it('Halted with a start request switches to Always and starts (start-paused path)', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('halt', { runStrategy: 'Halted' }) as KubeObject);
    await printable('halt', 'Stopped');
    await requestState('halt', [{ action: 'Start' }]);
    const v = await printable('halt', 'Running');
    expect(v.spec.runStrategy).toBe('Always');
  });

  it('running: true (deprecated) behaves as Always', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('legacy', { running: true }) as KubeObject);
    const v = await printable('legacy', 'Running');
    expect(v.status!.runStrategy).toBe('Always');
  });

  it('Always with a guest that keeps failing: CrashLoopBackOff with upstream backoff', async () => {
    await start({ failGuest: () => true });
    await h.store.create(VirtualMachineType, vm('crash', { runStrategy: 'Always' }) as KubeObject);
    const v = await printable('crash', 'CrashLoopBackOff');
    const f = v.status!.startFailure!;
    expect(f.consecutiveFailCount).toBe(1);
    // First failure: 10 s plus up to 5 s of jitter.
    const delay = (Date.parse(f.retryAfterTimestamp as string) - Date.now()) / 1000;
    expect(delay).toBeGreaterThan(5);
    expect(delay).toBeLessThanOrEqual(16);
    await waitFor('failed VMI removed', () => vmiGone('crash'));
  });

  it('RerunOnFailure: a failed VMI is replaced, a succeeded one is not', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('rerun', { runStrategy: 'RerunOnFailure' }) as KubeObject);
    await printable('rerun', 'Running');
    const first = await getVmi('rerun');
    // It ran, so no backoff applies to its failure.
    await h.store.update(VmiResource, {
      ...first,
      status: { ...first.status, phase: 'Failed' },
    } as KubeObject);
    const second = await waitFor('replacement Running', async () => {
      const x = await getVmi('rerun');
      return x.metadata!.uid !== first.metadata!.uid && x.status?.phase === 'Running' ? x : undefined;
    });
    await h.store.update(VmiResource, {
      ...second,
      status: { ...second.status, phase: 'Succeeded' },
    } as KubeObject);
    await waitFor('VMI removed', () => vmiGone('rerun'));
    await printable('rerun', 'Stopped');
  });

  it('unschedulable launcher pod: ErrorUnschedulable with the reason on the VM', async () => {
    await start({ unschedulable: () => '0/3 nodes are available: 3 Insufficient devices.kubevirt.io/kvm.' });
    await h.store.create(VirtualMachineType, vm('nosched', { runStrategy: 'Always' }) as KubeObject);
    const v = await printable('nosched', 'ErrorUnschedulable');
    expect(v.status!.conditions).toContainEqual(
      expect.objectContaining({
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: '0/3 nodes are available: 3 Insufficient devices.kubevirt.io/kvm.',
      }),
    );
  });

  it('a paused guest shows Paused', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('pause', { runStrategy: 'Always' }) as KubeObject);
    await printable('pause', 'Running');
    const vmi = await getVmi('pause');
    await h.store.update(VmiResource, {
      ...vmi,
      status: {
        ...vmi.status,
        conditions: [
          ...(vmi.status!.conditions ?? []),
          { type: 'Paused', status: 'True', reason: 'PausedByUser' },
        ],
      },
    } as KubeObject);
    const v = await printable('pause', 'Paused');
    expect(v.status!.conditions).toContainEqual(
      expect.objectContaining({ type: 'Paused', status: 'True', reason: 'PausedByUser' }),
    );
  });

  it('a template change while running sets RestartRequired', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('tmpl', { runStrategy: 'Always' }) as KubeObject);
    await printable('tmpl', 'Running');
    const cur = await getVm('tmpl');
    const next = structuredClone(cur);
    next.spec.template.spec!.domain.resources = { requests: { memory: '256Mi' } };
    await h.store.update(VirtualMachineType, next as KubeObject);
    const v = await waitFor('RestartRequired', async () => {
      const x = await getVm('tmpl');
      return x.status?.conditions?.find((c) => c.type === 'RestartRequired') ? x : undefined;
    });
    expect(v.status!.desiredGeneration).toBe(2);
    expect(v.status!.observedGeneration).toBe(1);
  });

  it('an invalid template is reported as a Failure condition and a Warning event', async () => {
    await start();
    const bad = vm('bad', { runStrategy: 'Always' });
    bad.spec.template.spec!.domain.devices.disks = [{ name: 'missing', disk: {} }];
    await h.store.create(VirtualMachineType, bad as KubeObject);
    const v = await waitFor('Failure', async () => {
      const x = await getVm('bad');
      return x.status?.conditions?.find((c) => c.type === 'Failure') ? x : undefined;
    });
    const c = v.status!.conditions!.find((x) => x.type === 'Failure')!;
    expect(c.message).toContain('spec.template.spec.domain.devices.disks[0]');
    const events = (
      await h.store.list<KubeObject & { reason: string; type: string }>(EventType, { namespace: 'default' })
    ).items;
    expect(events).toContainEqual(expect.objectContaining({ reason: 'FailedCreate', type: 'Warning' }));
  });

  it('deleting the VM deletes its VMI', async () => {
    await start();
    await h.store.create(VirtualMachineType, vm('gone', { runStrategy: 'Always' }) as KubeObject);
    await printable('gone', 'Running');
    await h.store.delete(VirtualMachineType, 'gone', { namespace: 'default' });
    await waitFor('VMI gone', () => vmiGone('gone'));
  });
});
