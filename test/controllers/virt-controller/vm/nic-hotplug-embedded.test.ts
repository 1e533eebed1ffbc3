/**
 * NIC hotplug through virt-controller on the embedded store (VM, VMI and workload-updater
 * controllers, a simulated two-node handler): a bridge interface on a Multus network added
 * to a running VM's template reaches the VMI; its launcher pod was not created with the
 * network, so the VMI gets MigrationRequired (AutoMigrationDueToLiveUpdate), the workload
 * updater creates one `kubevirt-workload-update-*` migration, the target launcher pod is
 * rendered with the network in its `k8s.v1.cni.cncf.io/networks` annotation, and the
 * condition goes once the VMI runs there; the VM is never RestartRequired. Then
 * `state: absent` reaches the VMI, the interface leaves the VMI's spec once its status
 * entry is gone (the domain let it go; simulated), and a second migration moves the VMI to
 * a pod without the network. An SR-IOV interface added is RestartRequired with the reason.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import {
  NetworkAttachmentDefinitionType,
  PodType,
  VirtualMachineInstanceMigrationType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const NETWORKS = 'k8s.v1.cni.cncf.io/networks';

describe('NIC hotplug in virt-controller (embedded)', () => {
  let h: Harness;
  afterEach(async () => {
    await h.stop();
  });
  const getVm = () => h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'nic', 'default');
  const getVmi = () => h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'nic', 'default');
  const editVmi = (what: string, f: (v: VirtualMachineInstance) => void) =>
    waitFor(what, async () => {
      const v = await getVmi();
      f(v);
      await h.store.update(VmiResource, v as KubeObject);
      return true;
    });
  const editVm = (what: string, f: (v: VirtualMachine) => void) =>
    waitFor(what, async () => {
      const vm = await getVm();
      f(vm);
      await h.store.update(VirtualMachineType, vm as KubeObject);
      return true;
    });
  const migrations = async () =>
    (
      await h.store.list<VirtualMachineInstanceMigration & KubeObject>(VirtualMachineInstanceMigrationType, {
        namespace: 'default',
      })
    ).items;
  /** The VMI's launcher pod on `node`. */
  const podOn = async (node: string) =>
    (await h.store.list<Pod & KubeObject>(PodType, { namespace: 'default' })).items.find(
      (p) => p.spec?.nodeName === node && !p.metadata?.deletionTimestamp,
    );

  it('plugs through a workload-update migration to a pod with the network, and unplugs through another', async () => {
    h = await startHarness({ sim: { nodeNames: ['node01', 'node02'] } });
    await h.store.create(NetworkAttachmentDefinitionType, {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: 'blue-net', namespace: 'default' },
      spec: { config: '{"cniVersion":"0.3.1","type":"bridge","bridge":"kvts-x"}' },
    } as KubeObject);
    await h.store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'nic', namespace: 'default' },
      spec: {
        runStrategy: 'Always',
        template: {
          spec: {
            domain: {
              devices: { interfaces: [{ name: 'default', masquerade: {} }] },
              resources: { requests: { memory: '64Mi' } },
            },
            networks: [{ name: 'default', pod: {} }],
          },
        },
      },
    } as KubeObject);
    await waitFor('the VMI Running', async () => {
      const v = await getVmi().catch(() => undefined);
      return v?.status?.phase === 'Running' ? v : undefined;
    });
    await editVmi('LiveMigratable', (v) => {
      v.status!.conditions = [...(v.status?.conditions ?? []), { type: 'LiveMigratable', status: 'True' }];
      v.status!.interfaces = [{ name: 'default' }];
    });
    expect((await podOn('node01'))?.metadata?.annotations?.[NETWORKS]).toBeUndefined();

    await editVm('add the NIC', (vm) => {
      const spec = vm.spec.template.spec!;
      spec.domain.devices.interfaces = [
        ...(spec.domain.devices.interfaces ?? []),
        { name: 'blue', bridge: {} },
      ];
      spec.networks = [...(spec.networks ?? []), { name: 'blue', multus: { networkName: 'blue-net' } }];
    });
    const done = await waitFor('the workload-update migration Succeeded', async () => {
      const [m] = await migrations();
      return m?.status?.phase === 'Succeeded' ? m : undefined;
    });
    expect(done.metadata?.name).toMatch(/^kubevirt-workload-update-/);
    expect(done.metadata?.annotations).toHaveProperty(['kubevirt.io/workloadUpdateMigration'], '');
    const moved = await waitFor('the VMI on node02 without MigrationRequired', async () => {
      const v = await getVmi();
      const req = v.status?.conditions?.some((c) => c.type === 'MigrationRequired');
      return v.status?.nodeName === 'node02' && !req ? v : undefined;
    });
    expect(moved.spec.domain.devices.interfaces?.map((i) => i.name)).toEqual(['default', 'blue']);
    expect(moved.spec.networks?.map((n) => n.name)).toEqual(['default', 'blue']);
    const target = await podOn('node02');
    expect(JSON.parse(target?.metadata?.annotations?.[NETWORKS] ?? '[]')).toEqual([
      { name: 'blue-net', namespace: 'default', interface: 'pod16477688c0e' },
    ]);
    expect((await migrations()).length).toBe(1);
    expect((await getVm()).status?.conditions?.find((c) => c.type === 'RestartRequired')).toBeUndefined();

    // The target's launcher plugged it (simulated: its status entry).
    await editVmi('the NIC in the domain', (v) => {
      v.status!.interfaces = [{ name: 'default' }, { name: 'blue', podInterfaceName: 'pod16477688c0e' }];
    });
    await editVm('unplug the NIC', (vm) => {
      const ifaces = vm.spec.template.spec!.domain.devices.interfaces ?? [];
      vm.spec.template.spec!.domain.devices.interfaces = ifaces.map((i) =>
        i.name === 'blue' ? { ...i, state: 'absent' } : i,
      );
    });
    await waitFor('the VMI interface absent', async () => {
      const v = await getVmi();
      return v.spec.domain.devices.interfaces?.find((i) => i.name === 'blue')?.state === 'absent'
        ? v
        : undefined;
    });
    // While the domain has it, the pod is left alone.
    expect((await getVmi()).status?.conditions?.some((c) => c.type === 'MigrationRequired')).toBe(false);
    // The launcher let it go (simulated): out of the VMI's spec, then a migration to a pod without it.
    await editVmi('the NIC gone from the domain', (v) => {
      v.status!.interfaces = [{ name: 'default' }];
    });
    const second = await waitFor('a second workload-update migration Succeeded', async () => {
      const ms = await migrations();
      return ms.length === 2 && ms.every((m) => m.status?.phase === 'Succeeded') ? ms : undefined;
    });
    expect(second.length).toBe(2);
    const back = await waitFor('the VMI on node01 without the NIC', async () => {
      const v = await getVmi();
      const req = v.status?.conditions?.some((c) => c.type === 'MigrationRequired');
      return v.status?.nodeName === 'node01' && !req ? v : undefined;
    });
    expect(back.spec.domain.devices.interfaces?.map((i) => i.name)).toEqual(['default']);
    expect(back.spec.networks?.map((n) => n.name)).toEqual(['default']);
    expect((await podOn('node01'))?.metadata?.annotations?.[NETWORKS]).toBeUndefined();
    expect((await getVm()).status?.conditions?.find((c) => c.type === 'RestartRequired')).toBeUndefined();

    // SR-IOV is not hotplugged: RestartRequired with the reason, the VMI left alone.
    await editVm('add an SR-IOV NIC', (vm) => {
      const spec = vm.spec.template.spec!;
      spec.domain.devices.interfaces = [...(spec.domain.devices.interfaces ?? []), { name: 'vf', sriov: {} }];
      spec.networks = [...(spec.networks ?? []), { name: 'vf', multus: { networkName: 'blue-net' } }];
    });
    const vm = await waitFor('RestartRequired', async () => {
      const x = await getVm();
      return x.status?.conditions?.find((c) => c.type === 'RestartRequired') ? x : undefined;
    });
    expect(vm.status?.conditions?.find((c) => c.type === 'RestartRequired')?.message).toBe(
      'spec.template.spec.domain.devices.interfaces[2]: hotplugging an SR-IOV interface (vf) is not supported; it is added at the next start',
    );
    expect((await getVmi()).spec.domain.devices.interfaces?.map((i) => i.name)).toEqual(['default']);
  });
});
