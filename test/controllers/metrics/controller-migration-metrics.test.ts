/**
 * virt-controller's migration outcome metrics with the migration controller running on the
 * embedded store (two simulated nodes): a migration that succeeds and one of a VMI that does
 * not exist (Failed) each give upstream's one series `kubevirt_vmi_migration_succeeded` /
 * `_failed{vmi, vmim, namespace} 1`; a migration still in flight is in neither; deleting
 * the migration object drops its series.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../src/api/generated/types';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { parseExposition } from '../../../src/controllers/metrics/exposition';
import { scrape } from '../../../src/controllers/metrics/server';
import { VirtualMachineInstanceMigrationType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../virt-controller/services/embedded-harness';

const vmi = (name: string): VirtualMachineInstance => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name, namespace: 'default', finalizers: ['kubevirt.io/foregroundDeleteVirtualMachine'] },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
});
const migration = (name: string, vmiName: string): VirtualMachineInstanceMigration => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstanceMigration',
  metadata: { name, namespace: 'default' },
  spec: { vmiName },
});

describe('migration succeeded/failed metrics from the migration controller', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness({ sim: { nodeNames: ['node01', 'node02'] } });
  });
  afterEach(async () => {
    await h.stop();
  });

  /** The scrape's samples of `family` as `vmim=value` with their labels. */
  const series = async (family: string) => {
    const s = parseExposition(await scrape([h.ctrl.metrics], 2000));
    return s.samples.filter((x) => x.name === family).map((x) => ({ ...x.labels, value: x.value }));
  };
  const phaseOf = async (name: string) =>
    (
      await h.store.get<VirtualMachineInstanceMigration & KubeObject>(
        VirtualMachineInstanceMigrationType,
        name,
        'default',
      )
    ).status?.phase;

  it('a succeeded and a failed migration each give one series with vmi, vmim and namespace', async () => {
    await h.store.create(VmiResource, vmi('m-ok') as KubeObject);
    await waitFor('VMI Running', async () => {
      const v = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'm-ok', 'default');
      return v.status?.phase === 'Running';
    });
    // Before any migration: the families exist (TYPE lines) with no series.
    expect(await series('kubevirt_vmi_migration_succeeded')).toEqual([]);
    expect(await series('kubevirt_vmi_migration_failed')).toEqual([]);

    await h.store.create(VirtualMachineInstanceMigrationType, migration('job-ok', 'm-ok') as KubeObject);
    await h.store.create(VirtualMachineInstanceMigrationType, migration('job-bad', 'ghost') as KubeObject);
    await waitFor('job-ok Succeeded', async () => (await phaseOf('job-ok')) === 'Succeeded');
    await waitFor('job-bad Failed', async () => (await phaseOf('job-bad')) === 'Failed');

    expect(await series('kubevirt_vmi_migration_succeeded')).toEqual([
      { vmi: 'm-ok', vmim: 'job-ok', namespace: 'default', value: 1 },
    ]);
    expect(await series('kubevirt_vmi_migration_failed')).toEqual([
      { vmi: 'ghost', vmim: 'job-bad', namespace: 'default', value: 1 },
    ]);
    // Neither is in flight any more.
    const text = await scrape([h.ctrl.metrics], 2000);
    expect(text).toMatch(/^kubevirt_vmi_migrations_in_running_phase 0$/m);
    expect(text).toMatch(/^kubevirt_vmi_migrations_in_pending_phase 0$/m);

    await h.store.delete(VirtualMachineInstanceMigrationType, 'job-bad', { namespace: 'default' });
    await waitFor(
      'job-bad series dropped',
      async () => (await series('kubevirt_vmi_migration_failed')).length === 0,
    );
    expect(await series('kubevirt_vmi_migration_succeeded')).toHaveLength(1);
  });
});
