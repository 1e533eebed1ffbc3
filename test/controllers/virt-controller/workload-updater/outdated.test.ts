/**
 * The workload updater's upgrade loop (upstream's workload-updater_test.go cases): which
 * outdated VMIs get a migration, which are evicted and when, what the KubeVirt CR's status
 * counts, and that nothing happens before the install finished its rollout.
 */
import { describe, expect, it } from 'vitest';
import type {
  KubeVirt,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { Expectations } from '../../../../src/controllers/runtime/expectations';
import type { KubeObject, ObjectClient } from '../../../../src/controllers/runtime/types';
import {
  OUTDATED_RECHECK_MS,
  OutdatedLauncherUpdater,
} from '../../../../src/controllers/virt-controller/workload-updater/outdated';

const NEW = 'reg/virt-launcher:new';
const OLD = 'reg/virt-launcher:old';

const vmi = (name: string, o: { image?: string; migratable?: boolean; phase?: string } = {}) =>
  ({
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: { domain: { devices: {} } },
    status: {
      phase: o.phase ?? 'Running',
      nodeName: 'a',
      launcherContainerImageVersion: o.image ?? OLD,
      conditions: [{ type: 'LiveMigratable', status: o.migratable === false ? 'False' : 'True' }],
    },
  }) as VirtualMachineInstance;

const kubevirt = (methods?: string[], extra: object = {}, status: object = {}): KubeVirt => ({
  metadata: { name: 'kubevirt', namespace: 'kubevirt' },
  spec: { ...(methods ? { workloadUpdateStrategy: { workloadUpdateMethods: methods, ...extra } } : {}) },
  status: {
    phase: 'Deployed',
    observedKubeVirtVersion: 'new',
    targetKubeVirtVersion: 'new',
    observedKubeVirtRegistry: 'reg',
    targetKubeVirtRegistry: 'reg',
    ...status,
  },
});

function harness(
  kv: KubeVirt,
  vmis: VirtualMachineInstance[],
  o: { migrations?: VirtualMachineInstanceMigration[]; parallel?: number; now?: () => Date } = {},
) {
  const created: KubeObject[] = [];
  const patches: unknown[] = [];
  const evicted: string[] = [];
  const events: string[] = [];
  const client = {
    create: async (_t: unknown, m: KubeObject) => {
      created.push(m);
      return { ...m, metadata: { ...m.metadata, name: `kubevirt-workload-update-${created.length}` } };
    },
    patch: async (_t: unknown, _n: string, ops: unknown) => {
      patches.push(ops);
      return {};
    },
  } as unknown as ObjectClient;
  const expectations = new Expectations();
  const u = new OutdatedLauncherUpdater({
    client,
    recorder: { event: (_o, _t, reason, msg) => events.push(`${reason}: ${msg}`) },
    kubevirts: { get: (k) => (k === 'kubevirt/kubevirt' ? kv : undefined), list: () => [kv] },
    vmis: { get: () => undefined, list: () => vmis },
    // What it created shows up as Pending migrations (as the informer would have them).
    unfinishedMigrations: () => [...(o.migrations ?? []), ...(created as VirtualMachineInstanceMigration[])],
    currentPod: (v) => ({ metadata: { name: `virt-launcher-${v.metadata?.name}`, namespace: 'ns' } }) as Pod,
    evict: async (p) => {
      evicted.push(p.metadata?.name ?? '');
    },
    launcherImage: NEW,
    parallelMigrationsPerCluster: () => o.parallel ?? 5,
    expectations,
    now: o.now,
  });
  /** The informer seeing what was created. */
  const observe = () => {
    for (const _ of created) expectations.creationObserved('kubevirt/kubevirt');
  };
  return { u, created, patches, evicted, events, observe, expectations };
}

describe('workload updater: outdated launchers', () => {
  it('LiveMigrate: each migratable outdated VMI gets a system-critical kubevirt-workload-update migration; the count is reported', async () => {
    const h = harness(kubevirt(['LiveMigrate']), [
      vmi('b'),
      vmi('a'),
      vmi('current', { image: NEW }),
      vmi('stuck', { migratable: false }),
      vmi('done', { phase: 'Succeeded' }),
    ]);
    expect(await h.u.reconcile('kubevirt/kubevirt')).toEqual({ requeueAfterMs: OUTDATED_RECHECK_MS });
    expect(h.created.map((m) => (m as VirtualMachineInstanceMigration).spec)).toEqual([
      { vmiName: 'a', priority: 'system-critical' },
      { vmiName: 'b', priority: 'system-critical' },
    ]);
    expect(h.created[0]?.metadata).toEqual({
      generateName: 'kubevirt-workload-update-',
      namespace: 'ns',
      annotations: { 'kubevirt.io/workloadUpdateMigration': '' },
    });
    // a, b and stuck are outdated; stuck is not migratable and Evict is not listed: left alone.
    expect(h.patches).toEqual([
      [{ op: 'add', path: '/status/outdatedVirtualMachineInstanceWorkloads', value: 3 }],
    ]);
    expect(h.evicted).toEqual([]);
    expect(h.events).toContain(
      'SuccessfulCreate: Created Migration kubevirt-workload-update-1 for automated workload update',
    );
  });

  it('no methods (upstream default): only counts, tested against the old count', async () => {
    const h = harness(kubevirt(undefined, {}, { outdatedVirtualMachineInstanceWorkloads: 5 }), [vmi('a')]);
    expect(await h.u.reconcile('kubevirt/kubevirt')).toBeUndefined();
    expect(h.created).toEqual([]);
    expect(h.patches).toEqual([
      [
        { op: 'test', path: '/status/outdatedVirtualMachineInstanceWorkloads', value: 5 },
        { op: 'replace', path: '/status/outdatedVirtualMachineInstanceWorkloads', value: 1 },
      ],
    ]);
  });

  it('nothing before the install is Deployed at its target version', async () => {
    for (const st of [{ phase: 'Deploying' }, { observedKubeVirtVersion: 'old' }]) {
      const h = harness(kubevirt(['LiveMigrate'], {}, st), [vmi('a')]);
      await h.u.reconcile('kubevirt/kubevirt');
      expect([h.created, h.patches]).toEqual([[], []]);
    }
  });

  it('migrations are capped by parallelMigrationsPerCluster less the running ones; VMIs with an unfinished migration wait', async () => {
    const running = (name: string, phase: string) =>
      ({
        metadata: { name: `m-${name}`, namespace: 'ns' },
        spec: { vmiName: name },
        status: { phase },
      }) as VirtualMachineInstanceMigration;
    const h = harness(kubevirt(['LiveMigrate']), [vmi('a'), vmi('b'), vmi('c'), vmi('d')], {
      migrations: [running('a', 'Running'), running('x', 'Scheduling'), running('y', 'Pending')],
      parallel: 3,
    });
    await h.u.reconcile('kubevirt/kubevirt');
    // 3 allowed, 2 running (a's and x's; y's is Pending): one more, for b (a has one).
    expect(h.created.map((m) => (m as VirtualMachineInstanceMigration).spec?.vmiName)).toEqual(['b']);
  });

  it('Evict: the non-migratable ones are evicted batchEvictionSize at a time, once per batchEvictionInterval', async () => {
    let t = 1_000_000;
    const h = harness(
      kubevirt(['LiveMigrate', 'Evict'], { batchEvictionSize: 2, batchEvictionInterval: '30s' }),
      [
        vmi('m'),
        vmi('s1', { migratable: false }),
        vmi('s2', { migratable: false }),
        vmi('s3', { migratable: false }),
      ],
      { now: () => new Date(t) },
    );
    await h.u.reconcile('kubevirt/kubevirt');
    expect(h.evicted).toEqual(['virt-launcher-s1', 'virt-launcher-s2']);
    expect(h.created.map((m) => (m as VirtualMachineInstanceMigration).spec?.vmiName)).toEqual(['m']);
    // Until the migration is seen, nothing more happens.
    t += 30_000;
    await h.u.reconcile('kubevirt/kubevirt');
    expect(h.evicted).toHaveLength(2);
    h.observe();
    t -= 1_000;
    await h.u.reconcile('kubevirt/kubevirt');
    expect(h.evicted).toHaveLength(2);
    t += 1_000;
    await h.u.reconcile('kubevirt/kubevirt');
    // (The fake's evicted pods do not go: the same two again, not three.)
    expect(h.evicted).toEqual([
      'virt-launcher-s1',
      'virt-launcher-s2',
      'virt-launcher-s1',
      'virt-launcher-s2',
    ]);
    expect(h.events).toContain(
      'SuccessfulEvict: Initiated eviction of VMI as part of automated workload update',
    );
    // m's migration is unfinished: no second one.
    expect(h.created).toHaveLength(1);
  });

  it('Evict alone evicts migratable VMIs too', async () => {
    const h = harness(kubevirt(['Evict']), [vmi('m')]);
    await h.u.reconcile('kubevirt/kubevirt');
    expect([h.evicted, h.created]).toEqual([['virt-launcher-m'], []]);
  });
});
