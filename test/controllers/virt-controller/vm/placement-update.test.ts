/**
 * Node selector, affinity and tolerations under LiveUpdate (upstream's
 * handleAffinityChangeRequest / handleTolerationsChangeRequest): the patch onto the
 * running VMI, the wait while it migrates, and the restart comparison that leaves them out.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import {
  placementChange,
  withoutLivePlacement,
} from '../../../../src/controllers/virt-controller/vm/placement-update';

const vmi = (spec: Partial<VirtualMachineInstance['spec']>, status: VirtualMachineInstance['status'] = {}) =>
  ({ metadata: { name: 'v' }, spec: { domain: { devices: {} }, ...spec }, status }) as VirtualMachineInstance;
const zoneAffinity = (zone: string) => ({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In' as const, values: [zone] }] }],
    },
  },
});
const toleration = { key: 'dedicated', operator: 'Equal', value: 'vms', effect: 'NoSchedule' } as const;

describe('placementChange', () => {
  it('nothing when the three fields match', () => {
    const spec = { nodeSelector: { disk: 'ssd' }, affinity: zoneAffinity('a'), tolerations: [toleration] };
    expect(placementChange(vmi(spec), vmi(structuredClone(spec)))).toEqual({});
  });

  it('adds what the VMI lacks, replaces what it has (tested), removes what the template dropped', () => {
    const wanted = vmi({ nodeSelector: { disk: 'ssd' }, affinity: zoneAffinity('b') });
    const live = vmi({ affinity: zoneAffinity('a'), tolerations: [toleration] });
    expect(placementChange(wanted, live)).toEqual({
      patch: [
        { op: 'test', path: '/spec/affinity', value: zoneAffinity('a') },
        { op: 'replace', path: '/spec/affinity', value: zoneAffinity('b') },
        { op: 'add', path: '/spec/nodeSelector', value: { disk: 'ssd' } },
        { op: 'test', path: '/spec/tolerations', value: [toleration] },
        { op: 'remove', path: '/spec/tolerations' },
      ],
    });
  });

  it("waits while the VMI migrates, with upstream's reasons", () => {
    const moving = { migrationState: { startTimestamp: '2026-12-05T01:00:00Z' } };
    expect(placementChange(vmi({ nodeSelector: { disk: 'ssd' } }), vmi({}, moving))).toEqual({
      wait: {
        reason: 'AffinityChangeError',
        message:
          'Error encountered while handling node affinity change request: Node affinity should not be changed during VMI migration',
      },
    });
    expect(placementChange(vmi({ tolerations: [toleration] }), vmi({}, moving)).wait?.reason).toBe(
      'TolerationsChangeError',
    );
    // A finished migration does not hold it.
    const done = { migrationState: { startTimestamp: 'x', endTimestamp: 'y', completed: true } };
    expect(placementChange(vmi({ tolerations: [toleration] }), vmi({}, done)).patch).toHaveLength(1);
  });
});

describe('withoutLivePlacement', () => {
  it("takes the running VMI's three fields, and only those, for the restart comparison", () => {
    const wanted = vmi({ nodeSelector: { disk: 'ssd' }, tolerations: [toleration], hostname: 'new' });
    const live = vmi({ affinity: zoneAffinity('a'), hostname: 'old' });
    expect(withoutLivePlacement(wanted, live).spec).toEqual({
      domain: { devices: {} },
      affinity: zoneAffinity('a'),
      hostname: 'new',
    });
  });
});
