/**
 * CPU hotplug through virt-controller on the embedded store (VM, VMI and workload-updater
 * controllers, a simulated two-node handler): raising a running VM's sockets waits for the
 * VMI's LiveMigratable condition (a Failure with upstream's HotPlugCPUError), then patches
 * the VMI's sockets, the VMI gets HotVCPUChange, the workload updater creates a
 * user-triggered `kubevirt-workload-update-*` migration that the simulated handlers carry
 * out, and the VM never shows RestartRequired; once the handler applied the vCPUs
 * (simulated here: currentCPUTopology and the condition gone), sockets past maxSockets
 * give RestartRequired with the reason and leave the VMI alone.
 *
 * Memory the same way: 1Gi -> 2Gi patches the VMI's guest memory and its request,
 * HotMemoryChange, one workload-update migration; 5Gi (past maxGuest 4Gi) is
 * RestartRequired with upstream's reason.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstanceMigration } from '../../../../src/api/generated/types';
import {
  VirtualMachineInstanceMigrationType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';
import { vmAccess } from '../services/vm-access';

describe('CPU and memory hotplug in virt-controller (embedded)', () => {
  let h: Harness;
  afterEach(async () => {
    await h.stop();
  });
  const { getVm, getVmi, editVmi } = vmAccess(() => h, 'cpu');
  const setSockets = (n: number) =>
    waitFor(`sockets ${n}`, async () => {
      const vm = await getVm();
      vm.spec.template.spec!.domain.cpu = { ...vm.spec.template.spec!.domain.cpu, sockets: n };
      await h.store.update(VirtualMachineType, vm as KubeObject);
      return true;
    });

  it('migrates a VMI whose sockets were raised, and refuses sockets past maxSockets with the reason', async () => {
    h = await startHarness({ sim: { nodeNames: ['node01', 'node02'] } });
    await h.store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'cpu', namespace: 'default' },
      spec: {
        runStrategy: 'Always',
        template: {
          spec: {
            domain: { cpu: { sockets: 1 }, devices: {}, resources: { requests: { memory: '64Mi' } } },
          },
        },
      },
    } as KubeObject);
    const running = await waitFor('the VMI Running', async () => {
      const v = await getVmi().catch(() => undefined);
      return v?.status?.phase === 'Running' ? v : undefined;
    });
    // LiveUpdate's defaults: headroom of maxHotplugRatio (4) sockets, the booted topology in status.
    expect(running.spec.domain.cpu).toMatchObject({ sockets: 1, maxSockets: 4 });
    expect(running.status?.currentCPUTopology?.sockets).toBe(1);
    // Before virt-handler reported LiveMigratable: a wait, shown as the VM's Failure (upstream's reason).
    await setSockets(2);
    const waiting = await waitFor('the Failure condition', async () => {
      const c = (await getVm()).status?.conditions?.find((x) => x.type === 'Failure');
      return c?.reason === 'HotPlugCPUError' ? c : undefined;
    });
    expect(waiting.message).toBe(
      "Error encountered while handling CPU change request: the VMI's LiveMigratable condition is not reported yet",
    );
    expect((await getVmi()).spec.domain.cpu?.sockets).toBe(1);
    await editVmi('LiveMigratable', (v) => {
      v.status!.conditions = [...(v.status?.conditions ?? []), { type: 'LiveMigratable', status: 'True' }];
    });
    const hot = await waitFor('the VMI at 2 sockets with HotVCPUChange', async () => {
      const v = await getVmi();
      const c = v.status?.conditions?.find((x) => x.type === 'HotVCPUChange');
      return v.spec.domain.cpu?.sockets === 2 && c?.status === 'True' ? v : undefined;
    });
    expect(hot.status?.currentCPUTopology?.sockets).toBe(1);
    const migrations = async () =>
      (
        await h.store.list<VirtualMachineInstanceMigration & KubeObject>(
          VirtualMachineInstanceMigrationType,
          {
            namespace: 'default',
          },
        )
      ).items;
    const done = await waitFor('the workload-update migration Succeeded', async () => {
      const [m] = await migrations();
      return m?.status?.phase === 'Succeeded' ? m : undefined;
    });
    expect(done.metadata?.name).toMatch(/^kubevirt-workload-update-/);
    expect(done.metadata?.annotations).toHaveProperty(['kubevirt.io/workloadUpdateMigration'], '');
    expect(done.spec).toEqual({ vmiName: 'cpu', priority: 'user-triggered' });
    expect((await migrations()).length).toBe(1);
    expect((await getVmi()).status?.nodeName).toBe('node02');
    const conds = (await getVm()).status?.conditions ?? [];
    expect(conds.find((c) => c.type === 'RestartRequired')).toBeUndefined();
    expect(conds.find((c) => c.type === 'Failure')).toBeUndefined();

    // The target's handler enabled the vCPUs (simulated): the topology recorded, the condition gone.
    await editVmi('the hotplug applied', (v) => {
      v.status!.currentCPUTopology = { sockets: 2, cores: 1, threads: 1 };
      v.status!.conditions = v.status?.conditions?.filter((c) => c.type !== 'HotVCPUChange');
    });
    await setSockets(5);
    const vm = await waitFor('RestartRequired', async () => {
      const x = await getVm();
      return x.status?.conditions?.find((c) => c.type === 'RestartRequired') ? x : undefined;
    });
    expect(vm.status?.conditions?.find((c) => c.type === 'RestartRequired')).toMatchObject({
      status: 'True',
      message: "CPU sockets updated in template spec to a value higher than what's available",
    });
    const after = await getVmi();
    expect(after.spec.domain.cpu?.sockets).toBe(2);
    expect(after.status?.conditions?.some((c) => c.type === 'HotVCPUChange')).toBe(false);
    expect((await migrations()).length).toBe(1);
  });
  it('migrates a VMI whose guest memory was raised, and refuses memory past maxGuest with the reason', async () => {
    h = await startHarness({ sim: { nodeNames: ['node01', 'node02'] } });
    await h.store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'cpu', namespace: 'default' },
      spec: {
        runStrategy: 'Always',
        template: {
          spec: {
            domain: { memory: { guest: '1Gi' }, devices: {}, resources: { requests: { memory: '1Gi' } } },
          },
        },
      },
    } as KubeObject);
    const running = await waitFor('the VMI Running', async () => {
      const v = await getVmi().catch(() => undefined);
      return v?.status?.phase === 'Running' ? v : undefined;
    });
    expect(running.spec.domain.memory).toEqual({ guest: '1Gi', maxGuest: '4Gi' });
    expect(running.status?.memory?.guestRequested).toBe('1Gi');
    await editVmi('LiveMigratable', (v) => {
      v.status!.conditions = [...(v.status?.conditions ?? []), { type: 'LiveMigratable', status: 'True' }];
    });
    const setGuest = (g: string) =>
      waitFor(`guest ${g}`, async () => {
        const vm = await getVm();
        vm.spec.template.spec!.domain.memory = { guest: g };
        await h.store.update(VirtualMachineType, vm as KubeObject);
        return true;
      });
    await setGuest('2Gi');
    const hot = await waitFor('the VMI at 2Gi with HotMemoryChange', async () => {
      const v = await getVmi();
      const c = v.status?.conditions?.find((x) => x.type === 'HotMemoryChange');
      return v.spec.domain.memory?.guest === '2Gi' && c?.status === 'True' ? v : undefined;
    });
    expect(hot.spec.domain.resources?.requests?.memory).toBe('2Gi');
    const done = await waitFor('the workload-update migration Succeeded', async () => {
      const [m] = (
        await h.store.list<VirtualMachineInstanceMigration & KubeObject>(
          VirtualMachineInstanceMigrationType,
          {
            namespace: 'default',
          },
        )
      ).items;
      return m?.status?.phase === 'Succeeded' ? m : undefined;
    });
    expect(done.metadata?.annotations).toHaveProperty(['kubevirt.io/workloadUpdateMigration'], '');
    expect((await getVm()).status?.conditions?.find((c) => c.type === 'RestartRequired')).toBeUndefined();
    await setGuest('5Gi');
    const vm = await waitFor('RestartRequired', async () => {
      const x = await getVm();
      return x.status?.conditions?.find((c) => c.type === 'RestartRequired') ? x : undefined;
    });
    expect(vm.status?.conditions?.find((c) => c.type === 'RestartRequired')?.message).toBe(
      "memory updated in template spec to a value higher than what's available",
    );
    expect((await getVmi()).spec.domain.memory?.guest).toBe('2Gi');
  });
});
