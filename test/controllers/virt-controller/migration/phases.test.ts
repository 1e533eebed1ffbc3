import { describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import {
  type MigrationStep,
  nextMigrationStep,
} from '../../../../src/controllers/virt-controller/migration/phases';

const mig = (phase?: string): VirtualMachineInstanceMigration => ({
  metadata: { name: 'm', namespace: 'ns', uid: 'mig-uid' },
  spec: { vmiName: 'v' },
  status: phase ? { phase } : undefined,
});
const vmi = (
  phase: string,
  migrationState?: NonNullable<VirtualMachineInstance['status']>['migrationState'],
): VirtualMachineInstance => ({
  metadata: { name: 'v', namespace: 'ns', uid: 'vmi-uid' },
  spec: { domain: { devices: {} } },
  status: { phase, nodeName: 'node01', migrationState },
});
const pod = (state: 'pending' | 'running' | 'failed'): Pod => ({
  metadata: { name: 'target', uid: 'p' },
  spec: {
    containers: [{ name: 'compute', image: 'x' }],
    nodeName: state === 'pending' ? undefined : 'node02',
  },
  status:
    state === 'running'
      ? { phase: 'Running', containerStatuses: [{ name: 'compute', state: { running: {} } }] }
      : { phase: state === 'failed' ? 'Failed' : 'Pending' },
});
const ours = { migrationUid: 'mig-uid', targetNode: 'node02' };

describe('nextMigrationStep (one transition per step, as upstream)', () => {
  it.each<[string, Parameters<typeof nextMigrationStep>[0], MigrationStep['kind'], string?]>([
    ['new -> Pending', { migration: mig(), vmi: vmi('Running') }, 'phase', 'Pending'],
    ['no VMI -> Failed', { migration: mig('Pending') }, 'phase', 'Failed'],
    ['VMI not running yet: wait', { migration: mig('Pending'), vmi: vmi('Scheduled') }, 'none'],
    ['Pending -> create target pod', { migration: mig('Pending'), vmi: vmi('Running') }, 'createTargetPod'],
    [
      "Pending, another migration's unfinished state: wait",
      {
        migration: mig('Pending'),
        vmi: vmi('Running', { migrationUid: 'other' }),
        stateOwner: { metadata: { uid: 'other' }, spec: {}, status: { phase: 'Running' } },
      },
      'none',
    ],
    [
      "Pending, another migration's state, that migration Failed: take over (upstream canMigrateVMI)",
      {
        migration: mig('Pending'),
        vmi: vmi('Running', { migrationUid: 'other' }),
        stateOwner: { metadata: { uid: 'other' }, spec: {}, status: { phase: 'Failed' } },
      },
      'createTargetPod',
    ],
    [
      "Pending, another migration's state, that migration gone: take over",
      { migration: mig('Pending'), vmi: vmi('Running', { migrationUid: 'other' }) },
      'createTargetPod',
    ],
    [
      'Pending, pod exists -> Scheduling',
      { migration: mig('Pending'), vmi: vmi('Running'), targetPod: pod('pending') },
      'phase',
      'Scheduling',
    ],
    [
      'Scheduling, pod pending: wait',
      { migration: mig('Scheduling'), vmi: vmi('Running'), targetPod: pod('pending') },
      'none',
    ],
    [
      'Scheduling, pod running -> Scheduled',
      { migration: mig('Scheduling'), vmi: vmi('Running'), targetPod: pod('running') },
      'phase',
      'Scheduled',
    ],
    [
      'Scheduling, pod failed -> Failed',
      { migration: mig('Scheduling'), vmi: vmi('Running'), targetPod: pod('failed') },
      'phase',
      'Failed',
    ],
    [
      'Scheduling, pod gone -> Failed',
      { migration: mig('Scheduling'), vmi: vmi('Running') },
      'phase',
      'Failed',
    ],
    [
      'Scheduled -> hand off',
      { migration: mig('Scheduled'), vmi: vmi('Running'), targetPod: pod('running') },
      'handOff',
    ],
    [
      'PreparingTarget, no address: wait',
      { migration: mig('PreparingTarget'), vmi: vmi('Running', ours), targetPod: pod('running') },
      'none',
    ],
    [
      'PreparingTarget, address -> TargetReady (even if already started)',
      {
        migration: mig('PreparingTarget'),
        vmi: vmi('Running', { ...ours, targetNodeAddress: 'a', startTimestamp: 't' }),
        targetPod: pod('running'),
      },
      'phase',
      'TargetReady',
    ],
    [
      'TargetReady, started -> Running',
      {
        migration: mig('TargetReady'),
        vmi: vmi('Running', { ...ours, targetNodeAddress: 'a', startTimestamp: 't' }),
        targetPod: pod('running'),
      },
      'phase',
      'Running',
    ],
    [
      'Running, completed -> Succeeded',
      {
        migration: mig('Running'),
        vmi: vmi('Running', { ...ours, startTimestamp: 't', completed: true }),
        targetPod: pod('running'),
      },
      'phase',
      'Succeeded',
    ],
    [
      'Running, failed -> Failed',
      {
        migration: mig('Running'),
        vmi: vmi('Running', { ...ours, startTimestamp: 't', completed: true, failed: true }),
        targetPod: pod('running'),
      },
      'phase',
      'Failed',
    ],
    [
      'PreparingTarget, target pod died -> Failed',
      { migration: mig('PreparingTarget'), vmi: vmi('Running', ours), targetPod: pod('failed') },
      'phase',
      'Failed',
    ],
    [
      'VMI stopped mid-way -> Failed',
      { migration: mig('Running'), vmi: vmi('Succeeded', ours) },
      'phase',
      'Failed',
    ],
    ['Succeeded is final', { migration: mig('Succeeded'), vmi: vmi('Running', ours) }, 'none'],
  ])('%s', (_n, input, kind, phase) => {
    const step = nextMigrationStep(input);
    expect(step.kind).toBe(kind);
    if (phase) expect(step).toMatchObject({ phase });
  });
});
