/**
 * The clone controller alone, over listers and a client that refuses: a refused restore
 * creation is reported in the clone's Ready condition and as a RestoreCreationFailed
 * event, and retried.
 */
import { describe, expect, it } from 'vitest';
import type {
  VirtualMachineClone,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from '../../../../src/api/generated/types';
import type { Lister } from '../../../../src/controllers/common/controller-ports';
import { VmCloneController } from '../../../../src/controllers/virt-controller/clone/clone-controller';

const lister = <T extends { metadata?: { name?: string; namespace?: string } }>(items: T[]): Lister<T> => ({
  get: (k) => items.find((o) => `${o.metadata?.namespace}/${o.metadata?.name}` === k),
  list: () => items,
});

describe('VmCloneController', () => {
  it('reports a refused restore creation in Ready and an event, and retries', async () => {
    const clone: VirtualMachineClone = {
      metadata: { name: 'c', namespace: 'ns', uid: 'u1' },
      spec: {
        source: { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: 's' },
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 't' },
      },
      status: { phase: 'RestoreInProgress' },
    };
    const snap = {
      metadata: { name: 's', namespace: 'ns', uid: 'su' },
      spec: { source: { kind: 'VirtualMachine', name: 'v' } },
      status: { readyToUse: true, virtualMachineSnapshotContentName: 'content' },
    } as VirtualMachineSnapshot;
    const content = {
      metadata: { name: 'content', namespace: 'ns' },
      spec: {
        source: {
          virtualMachine: {
            metadata: { name: 'v' },
            spec: { template: { spec: { domain: { devices: {} } } } },
          },
        },
        volumeBackups: [],
      },
    } as unknown as VirtualMachineSnapshotContent;
    const statuses: unknown[] = [];
    const events: string[] = [];
    const c = new VmCloneController({
      client: {
        create: async () => {
          throw new Error('admission webhook denied the request: spec.patches: nope');
        },
        updateStatus: async (_t: unknown, o: { status: unknown }) => {
          statuses.push(o.status);
          return o;
        },
      } as never,
      recorder: { event: (_o, type, reason, msg) => events.push(`${type} ${reason} ${msg}`) },
      clones: lister([clone]),
      snapshots: lister([snap]),
      contents: lister([content]),
      restores: lister([]),
      vms: lister([]),
      claims: lister([]),
    });
    expect(await c.reconcile('ns/c')).toEqual({ requeueAfterMs: 2000 });
    const msg =
      'failed creating restore for clone c: admission webhook denied the request: spec.patches: nope';
    expect(events).toEqual([`Warning RestoreCreationFailed ${msg}`]);
    expect(statuses).toEqual([
      {
        phase: 'RestoreInProgress',
        conditions: [
          expect.objectContaining({ type: 'Progressing', status: 'True', reason: 'Still processing' }),
          expect.objectContaining({ type: 'Ready', status: 'False', reason: msg }),
        ],
      },
    ]);
  });
});
