import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import {
  NODE_NAME_LABEL,
  nextVmiStatus,
  setCondition,
  withoutLauncherImage,
} from '../../../../src/controllers/virt-controller/vmi/status';

const NOW = '2026-01-01T00:00:00Z';

function vmi(phase?: string, extra: Partial<VirtualMachineInstance> = {}): VirtualMachineInstance {
  return {
    metadata: { name: 'v', namespace: 'ns', uid: 'vmi-uid', labels: { a: 'b' } },
    spec: { domain: { devices: {} } },
    status: phase === undefined ? undefined : { phase },
    ...extra,
  };
}

function pod(
  state:
    | 'pending'
    | 'unschedulable'
    | 'bound'
    | 'running'
    | 'failed'
    | 'succeeded'
    | 'imagepull'
    | 'deleting',
): Pod {
  const p: Pod = {
    metadata: { name: 'virt-launcher-v-abcde', namespace: 'ns', uid: 'pod-uid' },
    spec: { containers: [{ name: 'compute', image: 'x' }] },
    status: { phase: 'Pending' },
  };
  switch (state) {
    case 'unschedulable':
      p.status!.conditions = [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/3 nodes are available: 3 Insufficient devices.kubevirt.io/kvm.',
        },
      ];
      break;
    case 'bound':
      p.spec!.nodeName = 'node1';
      break;
    case 'running':
      p.spec!.nodeName = 'node1';
      p.status = {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [{ name: 'compute', ready: true, state: { running: { startedAt: NOW } } }],
      };
      break;
    case 'failed':
      p.spec!.nodeName = 'node1';
      p.status = { phase: 'Failed' };
      break;
    case 'succeeded':
      p.spec!.nodeName = 'node1';
      p.status = { phase: 'Succeeded' };
      break;
    case 'imagepull':
      p.spec!.nodeName = 'node1';
      p.status = {
        phase: 'Pending',
        containerStatuses: [
          { name: 'compute', state: { waiting: { reason: 'ErrImagePull', message: 'no such image' } } },
        ],
      };
      break;
    case 'deleting':
      p.spec!.nodeName = 'node1';
      p.metadata!.deletionTimestamp = NOW;
      p.status = { phase: 'Running', containerStatuses: [{ name: 'compute', state: { running: {} } }] };
      break;
  }
  return p;
}

const ready = (v: VirtualMachineInstance) => v.status?.conditions?.find((c) => c.type === 'Ready');

describe('nextVmiStatus: phase transitions (upstream updateStatus)', () => {
  it.each<[string, string | undefined, Parameters<typeof pod>[0] | undefined, string]>([
    ['new VMI, no pod yet -> Pending', undefined, undefined, 'Pending'],
    ['new VMI, pod exists -> Scheduling', undefined, 'pending', 'Scheduling'],
    ['Pending, pod exists -> Scheduling', 'Pending', 'pending', 'Scheduling'],
    ['Scheduling, pod pending -> Scheduling', 'Scheduling', 'pending', 'Scheduling'],
    ['Scheduling, pod bound but not running -> Scheduling', 'Scheduling', 'bound', 'Scheduling'],
    ['Scheduling, pod running -> Scheduled', 'Scheduling', 'running', 'Scheduled'],
    ['Scheduling, pod failed -> Failed', 'Scheduling', 'failed', 'Failed'],
    ['Scheduling, pod gone -> Failed', 'Scheduling', undefined, 'Failed'],
    ['Scheduling, pod being deleted -> Failed', 'Scheduling', 'deleting', 'Failed'],
    ['Scheduled, pod gone -> Failed', 'Scheduled', undefined, 'Failed'],
    ['Running, pod failed -> Failed', 'Running', 'failed', 'Failed'],
    ['Running, pod succeeded -> Failed', 'Running', 'succeeded', 'Failed'],
    ['Running, pod running -> Running', 'Running', 'running', 'Running'],
    ['Succeeded stays', 'Succeeded', undefined, 'Succeeded'],
    ['Failed stays', 'Failed', 'running', 'Failed'],
  ])('%s', (_n, phase, podState, expected) => {
    const out = nextVmiStatus({ vmi: vmi(phase), pod: podState ? pod(podState) : undefined, now: NOW });
    expect(out.status!.phase).toBe(expected);
  });

  it('a VMI deleted before any pod exists fails', () => {
    const v = vmi(undefined, { metadata: { name: 'v', namespace: 'ns', uid: 'u', deletionTimestamp: NOW } });
    expect(nextVmiStatus({ vmi: v, now: NOW }).status!.phase).toBe('Failed');
  });

  it('the pod created in this sync moves the VMI straight to Scheduling', () => {
    const out = nextVmiStatus({ vmi: vmi(), podJustCreated: pod('pending'), now: NOW });
    expect(out.status!.phase).toBe('Scheduling');
    expect(ready(out)).toMatchObject({ status: 'False', reason: 'GuestNotRunning' });
    expect(out.status!.activePods).toEqual({ 'pod-uid': '' });
    expect(out.status!.phaseTransitionTimestamps).toEqual([
      { phase: 'Scheduling', phaseTransitionTimestamp: NOW },
    ]);
  });

  it('Scheduled fills nodeName, the node label and activePods', () => {
    const out = nextVmiStatus({ vmi: vmi('Scheduling'), pod: pod('running'), now: NOW });
    expect(out.status!.nodeName).toBe('node1');
    expect(out.metadata!.labels).toEqual({ a: 'b', [NODE_NAME_LABEL]: 'node1' });
    expect(out.status!.activePods).toEqual({ 'pod-uid': 'node1' });
  });

  it('activePods follows the VMI to its new pod after a migration (phase stays Running)', () => {
    const running = vmi('Running', {
      status: { phase: 'Running', nodeName: 'node1', activePods: { 'pod-uid': 'node1' } },
    });
    // Unchanged pod: nothing to rewrite.
    expect(nextVmiStatus({ vmi: running, pod: pod('running'), now: NOW }).status!.activePods).toEqual({
      'pod-uid': 'node1',
    });
    const target = pod('running');
    target.metadata = { ...target.metadata, uid: 'target-uid' };
    target.spec!.nodeName = 'node2';
    const migrated = { ...running, status: { ...running.status, nodeName: 'node2' } };
    const out = nextVmiStatus({ vmi: migrated, pod: target, now: NOW });
    expect(out.status!.phase).toBe('Running');
    expect(out.status!.activePods).toEqual({ 'target-uid': 'node2' });
  });

  it('surfaces an unschedulable pod with its reason, and drops it once scheduled', () => {
    const out = nextVmiStatus({ vmi: vmi('Scheduling'), pod: pod('unschedulable'), now: NOW });
    expect(out.status!.conditions).toContainEqual(
      expect.objectContaining({
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: expect.stringContaining('Insufficient'),
      }),
    );
    const later = nextVmiStatus({ vmi: out, pod: pod('running'), now: NOW });
    expect(later.status!.conditions!.some((c) => c.type === 'PodScheduled')).toBe(false);
  });

  it('reports image pull errors as Synchronized=False', () => {
    const out = nextVmiStatus({ vmi: vmi('Scheduling'), pod: pod('imagepull'), now: NOW });
    expect(out.status!.conditions).toContainEqual(
      expect.objectContaining({ type: 'Synchronized', status: 'False', reason: 'ErrImagePull' }),
    );
  });

  it('reports a pod creation error as Synchronized=False while Pending', () => {
    const out = nextVmiStatus({
      vmi: vmi(),
      syncError: { reason: 'FailedCreate', message: 'boom' },
      now: NOW,
    });
    expect(out.status!.phase).toBe('Pending');
    expect(out.status!.conditions).toContainEqual(
      expect.objectContaining({
        type: 'Synchronized',
        status: 'False',
        reason: 'FailedCreate',
        message: 'boom',
      }),
    );
    expect(ready(out)).toMatchObject({ status: 'False', reason: 'PodNotExists' });
  });

  it('copies the pod Ready condition once Running', () => {
    const out = nextVmiStatus({ vmi: vmi('Running'), pod: pod('running'), now: NOW });
    expect(ready(out)).toMatchObject({ type: 'Ready', status: 'True' });
  });

  it('is a fixed point: recomputing an up-to-date status changes nothing', () => {
    const once = nextVmiStatus({ vmi: vmi('Scheduling'), pod: pod('running'), now: NOW });
    const twice = nextVmiStatus({ vmi: once, pod: pod('running'), now: '2030-01-01T00:00:00Z' });
    expect(twice).toEqual(once);
  });
});

describe('setCondition', () => {
  it('keeps timestamps when nothing but time changed', () => {
    const c1 = setCondition([], { type: 'Ready', status: 'False', reason: 'X' }, 't1');
    expect(setCondition(c1, { type: 'Ready', status: 'False', reason: 'X' }, 't2')).toBe(c1);
    const c2 = setCondition(c1, { type: 'Ready', status: 'True' }, 't3');
    expect(c2[0]).toMatchObject({ status: 'True', lastTransitionTime: 't3' });
  });
});

describe('nextVmiStatus: the launcher image (upstream setLauncherContainerInfo)', () => {
  const OUTDATED = 'kubevirt.io/outdatedLauncherImage';
  it('records the compute container image; labels the VMI outdated while it is not the installed one', () => {
    const old = nextVmiStatus({ vmi: vmi('Running'), pod: pod('running'), launcherImage: 'y', now: NOW });
    expect(old.status?.launcherContainerImageVersion).toBe('x');
    expect(old.metadata?.labels).toEqual({ a: 'b', [OUTDATED]: '' });
    // After the migration to a launcher of the installed image: the label goes.
    const moved = nextVmiStatus({ vmi: old, pod: pod('running'), launcherImage: 'x', now: NOW });
    expect(moved.status?.launcherContainerImageVersion).toBe('x');
    expect(moved.metadata?.labels).toEqual({ a: 'b' });
  });

  it('a final VMI whose pods are gone loses both', () => {
    const v = vmi('Failed');
    v.metadata!.labels = { a: 'b', [OUTDATED]: '' };
    v.status!.launcherContainerImageVersion = 'x';
    const out = withoutLauncherImage(v);
    expect(out.metadata?.labels).toEqual({ a: 'b' });
    expect(out.status).toEqual({ phase: 'Failed' });
    expect(withoutLauncherImage(vmi('Failed'))).toEqual(vmi('Failed'));
  });
});
