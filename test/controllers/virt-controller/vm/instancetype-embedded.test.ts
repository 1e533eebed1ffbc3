import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import { kinds } from '../../../../src/api/groups';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject, ResourceType } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const typeOf = (kind: string): ResourceType => {
  const k = kinds.find((x) => x.kind === kind)!;
  return {
    group: k.group,
    version: k.version,
    kind: k.kind,
    plural: k.plural,
    namespaced: k.namespaced,
    statusSubresource: false,
  };
};
const ClusterInstancetype = typeOf('VirtualMachineClusterInstancetype');
const Preference = typeOf('VirtualMachinePreference');

describe('VMs with an instance type and a preference (embedded store)', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness({
      instancetypes: true,
      types: [
        'VirtualMachineInstancetype',
        'VirtualMachineClusterInstancetype',
        'VirtualMachinePreference',
        'VirtualMachineClusterPreference',
      ].map(typeOf),
    });
  });
  afterEach(async () => {
    await h.stop();
  });

  it('creates the VMI with the instance type expanded into it', async () => {
    await h.store.create(ClusterInstancetype, {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClusterInstancetype',
      metadata: { name: 'u1.small' },
      spec: { cpu: { guest: 2 }, memory: { guest: '256Mi' } },
    } as KubeObject);
    await h.store.create(Preference, {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachinePreference',
      metadata: { name: 'virtio', namespace: 'default' },
      spec: { devices: { preferredDiskBus: 'virtio' } },
    } as KubeObject);
    const vm: VirtualMachine = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'typed', namespace: 'default' },
      spec: {
        runStrategy: 'Always',
        instancetype: { name: 'u1.small' },
        preference: { name: 'virtio', kind: 'VirtualMachinePreference' },
        template: {
          spec: {
            domain: { devices: { disks: [{ name: 'root' }] } },
            volumes: [
              { name: 'root', containerDisk: { image: 'quay.io/kubevirt/cirros-container-disk-demo' } },
            ],
          },
        },
      },
    };
    await h.store.create(VirtualMachineType, vm as KubeObject);
    const vmi = await waitFor('VMI Running', async () => {
      const x = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'typed', 'default');
      return x.status?.phase === 'Running' ? x : undefined;
    });
    expect(vmi.spec.domain.memory?.guest).toBe('256Mi');
    const cpu = vmi.spec.domain.cpu!;
    expect((cpu.sockets ?? 1) * (cpu.cores ?? 1) * (cpu.threads ?? 1)).toBe(2);
    expect(vmi.spec.domain.devices.disks![0].disk?.bus).toBe('virtio');
  });

  it('reports a missing instance type as a Failure condition', async () => {
    const vm: VirtualMachine = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'untyped', namespace: 'default' },
      spec: {
        runStrategy: 'Always',
        instancetype: { name: 'nope' },
        template: { spec: { domain: { devices: {} } } },
      },
    };
    await h.store.create(VirtualMachineType, vm as KubeObject);
    const v = await waitFor('Failure', async () => {
      const x = await h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'untyped', 'default');
      return x.status?.conditions?.find((c) => c.type === 'Failure');
    });
    expect(v.message).toContain('nope');
    expect(v.message).toContain('spec.instancetype');
  });
});
