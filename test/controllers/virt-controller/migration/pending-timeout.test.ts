/** Upstream's pending target pod timeouts: 300 s unschedulable, 900 s for any pending pod. */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstanceMigration } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { pendingTargetPodVerdict } from '../../../../src/controllers/virt-controller/migration/pending-timeout';

const m: VirtualMachineInstanceMigration = {
  metadata: { name: 'm', namespace: 'ns' },
  spec: { vmiName: 'v' },
};
const created = '2026-01-01T00:00:00Z';
const at = (s: number) => new Date(Date.parse(created) + s * 1000);
const pod = (unschedulable: boolean, phase = 'Pending'): Pod =>
  ({
    metadata: { name: 'p', namespace: 'ns', creationTimestamp: created },
    status: {
      phase,
      conditions: unschedulable ? [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] : [],
    },
  }) as Pod;

describe('pending target pod timeout', () => {
  it('gives up an unschedulable pod at 300 s and any pending pod at 900 s', () => {
    expect(pendingTargetPodVerdict(m, pod(true), at(299))).toEqual({ unschedulable: true, recheckMs: 1000 });
    expect(pendingTargetPodVerdict(m, pod(true), at(300))?.timedOut).toBe(
      'unschedulable pod ns/p timeout period exceeded',
    );
    expect(pendingTargetPodVerdict(m, pod(false), at(300))).toEqual({
      unschedulable: false,
      recheckMs: 600_000,
    });
    expect(pendingTargetPodVerdict(m, pod(false), at(900))?.timedOut).toBe(
      'pending pod ns/p timeout period exceeded',
    );
    expect(pendingTargetPodVerdict(m, pod(true, 'Running'), at(9999))).toBeUndefined();
  });

  it("honours upstream's annotations", () => {
    const custom = {
      ...m,
      metadata: { ...m.metadata, annotations: { 'kubevirt.io/migrationPendingPodTimeoutSeconds': '10' } },
    };
    expect(pendingTargetPodVerdict(custom, pod(false), at(10))?.timedOut).toBe(
      'pending pod ns/p timeout period exceeded',
    );
  });
});
