import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachine } from '../../../src/api/generated/types';
import { createInstancetypeCatalog } from '../../../src/api/instancetype/catalog';
import { expandVirtualMachine } from '../../../src/api/instancetype/expand';
import { validateVirtualMachine } from '../../../src/api/validation/vm';
import { fixture, fixtureObjects } from '../../support/fixtures';

const catalog = createInstancetypeCatalog(
  [
    'instancetype-large.yaml',
    'instancetype-small.yaml',
    'cluster-instancetype-small.yaml',
    'preference-virtio.yaml',
    'preference-windows.yaml',
  ].flatMap((f) => fixtureObjects(f).map((o) => o.object)),
);

/** The fixture VM with the template memory removed, so the instance type can provide it. */
function vmWithoutMemory(file: string): VirtualMachine {
  const vm = fixture<VirtualMachine>(file);
  delete vm.spec.template.spec?.domain.memory;
  return vm;
}

describe('instance type and preference expansion', () => {
  it('applies large (4 vCPUs as sockets, 2Gi) and drops the matcher', () => {
    const { vm, errors } = expandVirtualMachine(vmWithoutMemory('vm-large.yaml'), catalog);
    expect(errors).toEqual([]);
    expect(vm.spec.instancetype).toBeUndefined();
    expect(vm.spec.template.spec?.domain.cpu).toEqual({ sockets: 4, cores: 1, threads: 1 });
    expect(vm.spec.template.spec?.domain.memory).toEqual({ guest: '2Gi' });
  });

  it('resolves the cluster kind for cluster-small', () => {
    const { vm, errors } = expandVirtualMachine(vmWithoutMemory('vm-cluster-small.yaml'), catalog);
    expect(errors).toEqual([]);
    expect(vm.spec.template.spec?.domain.memory?.guest).toBe('128Mi');
    expect(vm.spec.template.spec?.domain.cpu).toEqual({ sockets: 1, cores: 1, threads: 1 });
  });

  it('applies the virtio preference to disks without a bus', () => {
    const { vm, errors } = expandVirtualMachine(vmWithoutMemory('vm-large-virtio.yaml'), catalog);
    expect(errors).toEqual([]);
    expect(vm.spec.preference).toBeUndefined();
    expect(vm.spec.template.spec?.domain.devices.disks?.map((d) => d.disk?.bus)).toEqual([
      'virtio',
      'virtio',
    ]);
  });

  it('applies the windows preference: SATA, e1000, TPM, features, EFI, clock', () => {
    const source = vmWithoutMemory('vm-windows-large.yaml');
    source.spec.template.spec!.domain.devices.interfaces = [{ name: 'default', masquerade: {} }];
    source.spec.template.spec!.networks = [{ name: 'default', pod: {} }];
    const { vm, errors } = expandVirtualMachine(source, catalog);
    expect(errors).toEqual([]);
    const d = vm.spec.template.spec!.domain;
    expect(d.devices.disks?.[0].disk?.bus).toBe('sata');
    expect(d.devices.interfaces?.[0].model).toBe('e1000');
    expect(d.devices.tpm).toEqual({});
    expect(d.features?.smm).toEqual({});
    expect(d.features?.hyperv?.spinlocks).toEqual({ spinlocks: 8191 });
    expect(d.firmware?.bootloader).toEqual({ efi: { secureBoot: true } });
    expect(d.firmware?.uuid).toBe('0b9c2a58-7d1e-4f36-8e2a-55c1f3a9d4b7');
    expect(d.clock?.utc).toEqual({});
    expect(d.clock?.timer?.hpet).toEqual({ present: false });
    expect(d.cpu).toEqual({ sockets: 4, cores: 1, threads: 1 });
    // The expanded VM is itself valid.
    expect(validateVirtualMachine(vm, createClusterConfig({}, { hostArchitecture: 'amd64' }))).toEqual([]);
  });

  it('reports the template memory of the unmodified fixture as a conflict, as upstream does', () => {
    const { errors } = expandVirtualMachine(fixture<VirtualMachine>('vm-large.yaml'), catalog);
    expect(errors).toEqual([
      {
        path: 'spec.template.spec.domain.memory',
        message: 'VM field spec.template.spec.domain.memory conflicts with selected instance type',
        type: 'FieldValueInvalid',
      },
    ]);
  });

  it('reports CPU conflicts field by field', () => {
    const vm = vmWithoutMemory('vm-small.yaml');
    vm.spec.template.spec!.domain.cpu = { sockets: 2, cores: 2 };
    const { errors } = expandVirtualMachine(vm, catalog);
    expect(errors.map((e) => e.path)).toEqual([
      'spec.template.spec.domain.cpu.sockets',
      'spec.template.spec.domain.cpu.cores',
    ]);
  });

  it('reports a missing instance type', () => {
    const vm = vmWithoutMemory('vm-small.yaml');
    vm.spec.instancetype!.name = 'cxlarge';
    expect(expandVirtualMachine(vm, catalog).errors).toEqual([
      {
        path: 'spec.instancetype',
        message:
          'Failure to find instancetype: virtualmachineinstancetypes.instancetype.kubevirt.io "cxlarge" not found',
        type: 'FieldValueNotFound',
      },
    ]);
  });

  it('reports a namespaced instance type looked up in another namespace as missing', () => {
    const vm = vmWithoutMemory('vm-small.yaml');
    vm.metadata!.namespace = 'other';
    expect(expandVirtualMachine(vm, catalog).errors[0].path).toBe('spec.instancetype');
  });

  it('rejects a spread preference that does not divide the vCPUs', () => {
    const spread = createInstancetypeCatalog([
      ...fixtureObjects('instancetype-large.yaml').map((o) => o.object),
      {
        kind: 'VirtualMachinePreference',
        metadata: { name: 'virtio' },
        spec: { cpu: { preferredCPUTopology: 'spread', spreadOptions: { ratio: 3 } } },
      },
    ]);
    expect(expandVirtualMachine(vmWithoutMemory('vm-large-virtio.yaml'), spread).errors).toEqual([
      {
        path: 'instancetype.spec.cpu.guest',
        message:
          '4 vCPUs provided by the instance type are not divisible by the Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio of 3 provided by the preference',
        type: 'FieldValueInvalid',
      },
    ]);
  });

  it('VM validation with a catalog expands first and reports conflicts', () => {
    const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
    const vm = fixture<VirtualMachine>('vm-small.yaml');
    expect(validateVirtualMachine(vm, cfg)).toEqual([]);
    expect(validateVirtualMachine(vm, cfg, { instancetypes: catalog }).map((e) => e.path)).toEqual([
      'spec.template.spec.domain.memory',
    ]);
    expect(validateVirtualMachine(vmWithoutMemory('vm-small.yaml'), cfg, { instancetypes: catalog })).toEqual(
      [],
    );
  });
});

describe('preference requirements', () => {
  const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
  const withRequirements = (requirements: Record<string, unknown>) =>
    createInstancetypeCatalog([
      ...fixtureObjects('instancetype-small.yaml').map((o) => o.object),
      { kind: 'VirtualMachinePreference', metadata: { name: 'virtio' }, spec: { requirements } },
    ]);

  it('rejects an instance type with fewer vCPUs than the preference requires', () => {
    const vm = vmWithoutMemory('vm-small.yaml');
    vm.spec.preference = { kind: 'VirtualMachinePreference', name: 'virtio' };
    expect(
      validateVirtualMachine(vm, cfg, { instancetypes: withRequirements({ cpu: { guest: 2 } }) }),
    ).toEqual([
      {
        path: 'spec.instancetype',
        message:
          'failure checking preference requirements: insufficient CPU resources of 1 vCPU provided by instance type, preference requires 2 vCPU',
        type: 'FieldValueNotFound',
      },
    ]);
  });

  it('rejects an instance type with less memory than the preference requires', () => {
    const vm = vmWithoutMemory('vm-small.yaml');
    vm.spec.preference = { kind: 'VirtualMachinePreference', name: 'virtio' };
    expect(
      validateVirtualMachine(vm, cfg, { instancetypes: withRequirements({ memory: { guest: '1Gi' } }) }).map(
        (e) => e.message,
      ),
    ).toEqual([
      'failure checking preference requirements: insufficient Memory resources of 128Mi provided by instance type, preference requires 1Gi',
    ]);
  });

  it('checks the VM itself when there is no instance type', () => {
    const vm = fixture<VirtualMachine>('vm-containerdisk.yaml');
    vm.spec.preference = { kind: 'VirtualMachinePreference', name: 'virtio' };
    expect(
      validateVirtualMachine(vm, cfg, { instancetypes: withRequirements({ cpu: { guest: 2 } }) }),
    ).toEqual([
      {
        path: 'spec.template.spec.domain.cpu.sockets',
        message:
          'failure checking preference requirements: insufficient CPU resources of 1 vCPU provided by VirtualMachine, preference requires 2 vCPU provided as sockets',
        type: 'FieldValueNotFound',
      },
    ]);
    vm.spec.template.spec!.domain.cpu = { sockets: 2 };
    expect(
      validateVirtualMachine(vm, cfg, { instancetypes: withRequirements({ cpu: { guest: 2 } }) }),
    ).toEqual([]);
  });
});
