/**
 * The migration limits (upstream's handleTargetPodCreation checks): which migration waits
 * for a slot under parallelMigrationsPerCluster / parallelOutboundMigrationsPerNode, and
 * the order the waiting ones start in.
 */
import { describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import {
  migrationLimitWait,
  migrationPriority,
  requeueDelayMs,
} from '../../../../src/controllers/virt-controller/migration/limits';

const vmi = (name: string, node: string, o: { migratable?: boolean } = {}): VirtualMachineInstance =>
  ({
    metadata: { name, namespace: 'ns', uid: `vmi-${name}` },
    spec: { domain: { devices: {} } },
    status: {
      phase: 'Running',
      nodeName: node,
      ...(o.migratable === false
        ? { conditions: [{ type: 'LiveMigratable', status: 'False', reason: 'DisksNotLiveMigratable' }] }
        : {}),
    },
  }) as VirtualMachineInstance;

const mig = (
  name: string,
  vmiName: string,
  o: { phase?: string; created?: string; priority?: string } = {},
): VirtualMachineInstanceMigration =>
  ({
    metadata: {
      name,
      namespace: 'ns',
      uid: `m-${name}`,
      creationTimestamp: o.created ?? '2026-12-04T18:00:00Z',
    },
    spec: { vmiName, ...(o.priority ? { priority: o.priority } : {}) },
    status: { phase: o.phase ?? 'Pending' },
  }) as VirtualMachineInstanceMigration;

function wait(
  me: VirtualMachineInstanceMigration,
  vmis: VirtualMachineInstance[],
  migrations: VirtualMachineInstanceMigration[],
  o: { perCluster?: number; perNode?: number; targetPods?: string[] } = {},
) {
  const byName = new Map(vmis.map((v) => [v.metadata?.name, v]));
  return migrationLimitWait({
    migration: me,
    vmi: byName.get(me.spec.vmiName)!,
    migrations: [me, ...migrations],
    vmiOf: (m) => byName.get(m.spec.vmiName),
    hasTargetPod: (m) => (o.targetPods ?? []).includes(m.metadata?.name ?? ''),
    perCluster: o.perCluster ?? 5,
    perNode: o.perNode ?? 2,
  });
}

describe('migration limits', () => {
  const vmis = [vmi('a', 'n1'), vmi('b', 'n1'), vmi('c', 'n1'), vmi('d', 'n2'), vmi('e', 'n2')];

  it('goes when nothing else runs', () => {
    expect(wait(mig('ma', 'a'), vmis, [])).toBeUndefined();
  });

  it('waits at the per-node outbound limit with upstream message; a migration from another node still goes', () => {
    const running = [mig('mb', 'b', { phase: 'Running' })];
    expect(wait(mig('ma', 'a'), vmis, running, { perNode: 1 })).toBe(
      'Waiting to schedule target pod for vmi [ns/a] migration because total running parallel outbound migrations on source node n1 [1] has hit outbound migrations per node limit.',
    );
    expect(wait(mig('md', 'd'), vmis, running, { perNode: 1 })).toBeUndefined();
  });

  it('counts a Pending migration whose target pod exists as running (upstream findRunningMigrations), final ones not', () => {
    const others = [mig('mb', 'b'), mig('mc', 'c', { phase: 'Succeeded' })];
    expect(wait(mig('ma', 'a'), vmis, others, { perNode: 1, targetPods: ['mb'] })).toMatch(
      /outbound migrations on source node n1 \[1\]/,
    );
    expect(
      wait(mig('ma', 'a'), vmis, [mig('mc', 'c', { phase: 'Succeeded' })], { perNode: 1 }),
    ).toBeUndefined();
  });

  it('counts a VMI whose migration state names the node as the source (upstream outboundMigrationsOnNode)', () => {
    const moved = vmi('d', 'n2');
    moved.status!.migrationState = { sourceNode: 'n1', targetNode: 'n2', migrationUid: 'm-md' };
    expect(
      wait(mig('ma', 'a'), [vmis[0], moved], [mig('md', 'd', { phase: 'Running' })], { perNode: 1 }),
    ).toMatch(/source node n1 \[1\]/);
  });

  it('waits at the cluster limit', () => {
    const running = [mig('mb', 'b', { phase: 'Scheduling' }), mig('md', 'd', { phase: 'TargetReady' })];
    expect(wait(mig('ma', 'a'), vmis, running, { perCluster: 2, perNode: 5 })).toBe(
      'Waiting to schedule target pod for vmi [ns/a] migration because total running parallel migration count [2] is currently at the global cluster limit.',
    );
  });

  it('queues in order: an earlier waiting migration from the same node takes the free slot first', () => {
    const first = mig('mb', 'b', { created: '2026-12-04T17:59:00Z' });
    expect(wait(mig('ma', 'a'), vmis, [first], { perNode: 1 })).toBe(
      'Waiting to schedule target pod for vmi [ns/a] migration: 1 waiting migration(s) from source node n1 ahead of it take the 1 free slot(s) of the per-node limit.',
    );
    // ... and the earlier one goes.
    expect(wait(first, vmis, [mig('ma', 'a')], { perNode: 1 })).toBeUndefined();
  });

  it('queues by priority before age: system-critical (evacuation) ahead of an older default one', () => {
    const older = mig('mb', 'b', { created: '2026-12-04T17:00:00Z' });
    const evac = mig('ma', 'a', { priority: 'system-critical' });
    expect(wait(evac, vmis, [older], { perNode: 1 })).toBeUndefined();
    expect(wait(older, vmis, [evac], { perNode: 1 })).toMatch(
      /1 waiting migration\(s\) from source node n1 ahead/,
    );
  });

  it('a waiting migration ahead that cannot start does not hold the queue', () => {
    const blocked = [vmi('a', 'n1'), vmi('b', 'n1', { migratable: false })];
    expect(
      wait(mig('ma', 'a'), blocked, [mig('mb', 'b', { created: '2026-12-04T17:00:00Z' })], { perNode: 1 }),
    ).toBeUndefined();
  });

  it('one ahead on another node takes a cluster slot only when its own node has room', () => {
    const ahead = mig('md', 'd', { created: '2026-12-04T17:00:00Z' });
    // Cluster: 2 slots, one running from n2; d waits ahead of a.
    const runningN2 = mig('me', 'e', { phase: 'Running' });
    // n2 is full (per node 1): d cannot start, so a takes the last cluster slot.
    expect(wait(mig('ma', 'a'), vmis, [ahead, runningN2], { perCluster: 2, perNode: 1 })).toBeUndefined();
    // n2 has room (per node 2): d takes it first.
    expect(wait(mig('ma', 'a'), vmis, [ahead, runningN2], { perCluster: 2, perNode: 2 })).toBe(
      'Waiting to schedule target pod for vmi [ns/a] migration: 1 waiting migration(s) ahead of it take the 1 free slot(s) of the cluster limit.',
    );
  });

  it("priorities and retry delays as upstream's queue", () => {
    expect(migrationPriority(mig('x', 'a', { priority: 'system-critical' }))).toBe(100);
    expect(migrationPriority(mig('x', 'a', { priority: 'user-triggered' }))).toBe(50);
    expect(migrationPriority(mig('x', 'a', { priority: 'system-maintenance' }))).toBe(20);
    expect(migrationPriority(mig('x', 'a'))).toBe(0);
    expect(requeueDelayMs(mig('x', 'a', { priority: 'system-critical' }))).toBe(1000);
    expect(requeueDelayMs(mig('x', 'a', { priority: 'user-triggered' }))).toBe(3000);
    expect(requeueDelayMs(mig('x', 'a'))).toBe(5000);
  });
});
