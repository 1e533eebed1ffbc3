/**
 * An upgrade's workload update through virt-controller on the embedded store (VM, VMI,
 * migration and workload-updater controllers, a simulated two-node handler): two running
 * VMs launched by virt-controller installing image A; virt-controller restarted installing
 * image B (what an operator upgrade does) marks both VMIs outdated and the KubeVirt CR counts
 * 2; with `workloadUpdateMethods: [LiveMigrate]` each gets a system-critical
 * `kubevirt-workload-update-*` migration, after which both run on launchers of image B, the
 * label is gone and the count is 0.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  KubeVirt,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import {
  KubeVirtType,
  NamespaceType,
  VirtualMachineInstanceMigrationType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const OLD = 'kubevirt-ts/launcher:test';
const NEW = 'kubevirt-ts/launcher:next';
const OUTDATED = 'kubevirt.io/outdatedLauncherImage';

describe('workload update after an upgrade (embedded)', () => {
  let h: Harness;
  afterEach(async () => {
    await h.stop();
  });

  it('live-migrates the VMIs running the old launcher image to launchers of the new one', async () => {
    h = await startHarness({ sim: { nodeNames: ['node01', 'node02'] } });
    const vmis = async () =>
      (await h.store.list<VirtualMachineInstance & KubeObject>(VmiResource, { namespace: 'default' })).items;
    const kv = () => h.store.get<KubeVirt & KubeObject>(KubeVirtType, 'kubevirt', 'kubevirt');
    await h.store.create(NamespaceType, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'kubevirt' },
    });
    const cr = await h.store.create(KubeVirtType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'KubeVirt',
      metadata: { name: 'kubevirt', namespace: 'kubevirt' },
      spec: { workloadUpdateStrategy: { workloadUpdateMethods: ['LiveMigrate'] } },
    } as KubeObject);
    await h.store.updateStatus(KubeVirtType, {
      ...cr,
      status: {
        phase: 'Deployed',
        observedKubeVirtVersion: 'next',
        targetKubeVirtVersion: 'next',
        observedKubeVirtRegistry: 'kubevirt-ts',
        targetKubeVirtRegistry: 'kubevirt-ts',
      },
    } as KubeObject);
    for (const name of ['vm-a', 'vm-b'])
      await h.store.create(VirtualMachineType, {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: { name, namespace: 'default' },
        spec: {
          runStrategy: 'Always',
          template: { spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } } },
        },
      } as KubeObject);
    await waitFor('both VMIs Running on launchers of the old image', async () => {
      const vs = await vmis();
      return vs.length === 2 &&
        vs.every((v) => v.status?.phase === 'Running' && v.status.launcherContainerImageVersion === OLD)
        ? true
        : undefined;
    });
    // The simulated handler does not report migratability: as virt-handler would.
    for (const v of await vmis())
      await waitFor(`${v.metadata?.name} LiveMigratable`, async () => {
        const x = await h.store.get<VirtualMachineInstance & KubeObject>(
          VmiResource,
          v.metadata?.name ?? '',
          'default',
        );
        x.status!.conditions = [...(x.status?.conditions ?? []), { type: 'LiveMigratable', status: 'True' }];
        await h.store.update(VmiResource, x as KubeObject);
        return true;
      });
    // Nothing outdated yet: the count says 0.
    await waitFor('the outdated count 0', async () =>
      (await kv()).status?.outdatedVirtualMachineInstanceWorkloads === 0 ? true : undefined,
    );

    await h.restartController(NEW);
    const moved = await waitFor(
      'both VMIs on launchers of the new image',
      async () => {
        const vs = await vmis();
        return vs.every((v) => v.status?.launcherContainerImageVersion === NEW) ? vs : undefined;
      },
      30_000,
    );
    for (const v of moved) expect(v.metadata?.labels?.[OUTDATED]).toBeUndefined();
    const migrations = (
      await h.store.list<VirtualMachineInstanceMigration & KubeObject>(VirtualMachineInstanceMigrationType, {
        namespace: 'default',
      })
    ).items;
    expect(migrations.map((m) => [m.spec?.vmiName, m.spec?.priority, m.status?.phase]).sort()).toEqual([
      ['vm-a', 'system-critical', 'Succeeded'],
      ['vm-b', 'system-critical', 'Succeeded'],
    ]);
    for (const m of migrations) expect(m.metadata?.name).toMatch(/^kubevirt-workload-update-/);
    await waitFor('the outdated count back to 0', async () =>
      (await kv()).status?.outdatedVirtualMachineInstanceWorkloads === 0 ? true : undefined,
    );
    expect(h.errors).toEqual([]);
  });
});
