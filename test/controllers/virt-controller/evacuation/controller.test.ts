/**
 * The evacuation controller's choices (upstream's evacuation_test.go cases): which VMIs of
 * a node get a migration, and the migration it creates.
 */
import { describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import { Expectations } from '../../../../src/controllers/runtime/expectations';
import type { KubeObject, ObjectClient } from '../../../../src/controllers/runtime/types';
import { EvacuationController } from '../../../../src/controllers/virt-controller/evacuation/controller';

const vmi = (
  name: string,
  o: { strategy?: string; evacuate?: boolean; migratable?: boolean; phase?: string } = {},
): VirtualMachineInstance =>
  ({
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: { domain: { devices: {} }, ...(o.strategy ? { evictionStrategy: o.strategy } : {}) },
    status: {
      phase: o.phase ?? 'Running',
      nodeName: 'a',
      ...(o.evacuate ? { evacuationNodeName: 'a' } : {}),
      conditions: [{ type: 'LiveMigratable', status: o.migratable === false ? 'False' : 'True' }],
    },
  }) as VirtualMachineInstance;

function harness(
  vmis: VirtualMachineInstance[],
  {
    taint = false,
    migrations = [] as VirtualMachineInstanceMigration[],
    clusterDefault = undefined as string | undefined,
  } = {},
) {
  const created: KubeObject[] = [];
  const client = {
    create: async (_t: unknown, o: KubeObject) => {
      created.push(o);
      return { ...o, metadata: { ...o.metadata, name: 'kubevirt-evacuation-x1' } };
    },
  } as unknown as ObjectClient;
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'a' },
    spec: taint ? { taints: [{ key: 'kubevirt.io/drain', effect: 'NoSchedule' }] } : {},
  };
  const c = new EvacuationController({
    client,
    recorder: { event: () => {} },
    nodes: { get: (k) => (k === 'a' ? node : undefined), list: () => [node] },
    vmisOnNode: () => vmis,
    unfinishedMigrations: () => migrations,
    activePods: () => 1,
    config: () => ({ evictionStrategy: clusterDefault }),
    expectations: new Expectations(),
  });
  return { c, created };
}

describe('evacuation controller', () => {
  it('a VMI marked for evacuation with LiveMigrate gets one system-critical migration from this node', async () => {
    const { c, created } = harness([vmi('m', { strategy: 'LiveMigrate', evacuate: true }), vmi('stay')]);
    await c.reconcile('a');
    expect(created).toEqual([
      {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstanceMigration',
        metadata: {
          generateName: 'kubevirt-evacuation-',
          namespace: 'ns',
          annotations: { 'kubevirt.io/evacuationMigration': 'a' },
        },
        spec: { vmiName: 'm', priority: 'system-critical' },
      },
    ]);
  });

  it('not for a VMI already migrating, not live-migratable, finished, or with strategy None/External', () => {
    const migrating = {
      metadata: { namespace: 'ns' },
      spec: { vmiName: 'busy' },
    } as VirtualMachineInstanceMigration;
    const { c } = harness(
      [
        vmi('busy', { strategy: 'LiveMigrate', evacuate: true }),
        vmi('stuck', { strategy: 'LiveMigrate', evacuate: true, migratable: false }),
        vmi('done', { strategy: 'LiveMigrate', evacuate: true, phase: 'Succeeded' }),
        vmi('none', { strategy: 'None', evacuate: true }),
        vmi('ext', { strategy: 'External', evacuate: true }),
        vmi('ok', { strategy: 'LiveMigrateIfPossible', evacuate: true }),
      ],
      { migrations: [migrating] },
    );
    expect(c.candidates('a').map((v) => v.metadata?.name)).toEqual(['ok']);
  });

  it('the drain taint evacuates every VMI that migrates on eviction (the cluster default counts)', () => {
    const { c } = harness([vmi('x'), vmi('y', { strategy: 'None' })], {
      taint: true,
      clusterDefault: 'LiveMigrate',
    });
    expect(c.candidates('a').map((v) => v.metadata?.name)).toEqual(['x']);
  });
});
