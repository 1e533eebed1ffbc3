/**
 * A migration object deleted while the guest is moving (upstream
 * markMigrationAbortInVmiStatus): the controller asks the source to abort through
 * `abortRequested` and keeps the object until the source reports how the migration ended.
 */
import { describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
  VirtualMachineInstanceMigrationState,
} from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { nextMigrationStep } from '../../../../src/controllers/virt-controller/migration/phases';

const deleted = (phase: string): VirtualMachineInstanceMigration => ({
  metadata: { name: 'm', namespace: 'ns', uid: 'mig-uid', deletionTimestamp: '2026-11-29T17:00:00Z' },
  spec: { vmiName: 'v' },
  status: { phase },
});
const vmi = (ms: VirtualMachineInstanceMigrationState): VirtualMachineInstance => ({
  metadata: { name: 'v', namespace: 'ns', uid: 'vmi-uid' },
  spec: { domain: { devices: {} } },
  status: { phase: 'Running', nodeName: 'node01', migrationState: { migrationUid: 'mig-uid', ...ms } },
});
const targetPod: Pod = {
  metadata: { name: 'target', uid: 'p' },
  spec: { containers: [{ name: 'compute', image: 'x' }], nodeName: 'node02' },
  status: { phase: 'Running', containerStatuses: [{ name: 'compute', state: { running: {} } }] },
};
const started = { startTimestamp: '2026-11-29T16:59:00Z', targetNode: 'node02' };

describe('nextMigrationStep: deleted migration object', () => {
  it('running: asks the source to abort, once', () => {
    expect(nextMigrationStep({ migration: deleted('Running'), vmi: vmi(started), targetPod })).toEqual({
      kind: 'abort',
    });
    expect(
      nextMigrationStep({
        migration: deleted('Running'),
        vmi: vmi({ ...started, abortRequested: true }),
        targetPod,
      }),
    ).toEqual({ kind: 'none' });
  });

  it('aborted by the source: Failed with its reason', () => {
    const ms = {
      ...started,
      abortRequested: true,
      abortStatus: 'Succeeded',
      endTimestamp: '2026-11-29T17:00:01Z',
      completed: true,
      failed: true,
      failureReason: 'Live migration aborted',
    };
    expect(nextMigrationStep({ migration: deleted('Running'), vmi: vmi(ms), targetPod })).toEqual({
      kind: 'phase',
      phase: 'Failed',
      reason: 'Live migration aborted',
    });
  });

  it('the guest arrived before the abort took: Succeeded', () => {
    const ms = { ...started, abortRequested: true, endTimestamp: '2026-11-29T17:00:01Z', completed: true };
    expect(nextMigrationStep({ migration: deleted('Running'), vmi: vmi(ms), targetPod })).toEqual({
      kind: 'phase',
      phase: 'Succeeded',
    });
  });

  it('not started yet: Failed at once', () => {
    expect(
      nextMigrationStep({ migration: deleted('Scheduling'), vmi: vmi({ targetNode: 'node02' }), targetPod }),
    ).toEqual({ kind: 'phase', phase: 'Failed', reason: 'migration object deleted' });
  });
});
