import { describe, expect, it } from 'vitest';
import { formatTimeline, migrationFacts, podFacts, vmiFacts } from '../../bench/migration-timeline';

describe("bench:migration's timeline facts", () => {
  it("names the migration's phase and finalizer", () => {
    expect(migrationFacts({ metadata: { finalizers: ['f'] }, status: { phase: 'Scheduling' } })).toEqual([
      'VMIM finalizer set',
      'VMIM Scheduling',
    ]);
    expect(migrationFacts({})).toEqual([]);
  });

  it("names the VMI's node and each migrationState field present", () => {
    const facts = vmiFacts({
      status: {
        nodeName: 'vm',
        migrationState: { migrationUid: 'abcdef0123', targetNodeAddress: '10.0.0.2', completed: false },
      },
    });
    expect(facts).toEqual([
      'VMI nodeName=vm',
      'VMI migrationState abcdef01 set',
      'VMI migrationState.targetNodeAddress (abcdef01)',
    ]);
  });

  it("names a pod's node, conditions and container states", () => {
    const facts = podFacts({
      metadata: { name: 'p', annotations: { 'kubevirt-ts.io/migration-target-domain': '<domain/>' } },
      spec: { nodeName: 'vm-2' },
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'False' }],
        containerStatuses: [
          { name: 'compute', state: { running: {} }, ready: true },
          { name: 'volumedisk', state: { waiting: { reason: 'ContainerCreating' } } },
        ],
      },
    });
    expect(facts).toEqual([
      'pod p seen',
      'pod p bound to vm-2',
      'pod p phase Running',
      'pod p Ready=False',
      'pod p container compute running',
      'pod p container compute ready',
      'pod p container volumedisk waiting ContainerCreating',
      'pod p target domain XML published',
    ]);
  });

  it('orders lines by time relative to t0 and drops those outside the window', () => {
    const out = formatTimeline(
      [
        { at: 1_300, source: 'b', text: 'second' },
        { at: 1_050, source: 'a', text: 'first', own: 1_040 },
        { at: 500, source: 'c', text: 'too early' },
        { at: 9_000, source: 'd', text: 'too late' },
      ],
      1_000,
      2_000,
    );
    expect(out).toHaveLength(2);
    expect(out[0]).toMatch(/^\+ {4}50 ms {2}a +\[own \+40 ms\] first$/);
    expect(out[1]).toMatch(/^\+ {3}300 ms {2}b +second$/);
  });
});
