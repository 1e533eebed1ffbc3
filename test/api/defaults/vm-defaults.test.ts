import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { defaultVirtualMachineInstanceMigration } from '../../../src/api/defaults/migration-defaults';
import { defaultVirtualMachine } from '../../../src/api/defaults/vm-defaults';
import type { VirtualMachine, VirtualMachineInstanceMigration } from '../../../src/api/generated/types';
import { createInstancetypeCatalog } from '../../../src/api/instancetype/catalog';
import { expandVirtualMachine } from '../../../src/api/instancetype/expand';
import { fixture, fixtureObjects } from '../../support/fixtures';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });

describe('VM defaulting', () => {
  it('sets architecture and machine type on the template, nothing else', () => {
    const out = defaultVirtualMachine(fixture<VirtualMachine>('vm-containerdisk.yaml'), cfg);
    expect(out.spec.template.spec?.architecture).toBe('amd64');
    expect(out.spec.template.spec?.domain.machine).toEqual({ type: 'q35' });
    expect(out.spec.template.spec?.domain.cpu).toBeUndefined();
    expect(out.spec.runStrategy).toBe('Halted');
  });

  it("gives the template upstream's default pod interface and network (SetVirtualMachineDefaults)", () => {
    const vm: VirtualMachine = {
      metadata: { name: 'bare', namespace: 'ns' },
      spec: { template: { spec: { domain: { devices: {} } } } },
    } as VirtualMachine;
    const t = defaultVirtualMachine(vm, cfg).spec.template.spec!;
    expect(t.domain.devices.interfaces).toEqual([{ name: 'default', bridge: {} }]);
    expect(t.networks).toEqual([{ name: 'default', pod: {} }]);
  });

  it('applies the preferred interface model to the auto-added pod interface once the VM is expanded', () => {
    // Upstream adds the interface at VM admission, before the preference is applied.
    const pref = {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClusterPreference',
      metadata: { name: 'e1000-pref' },
      spec: { devices: { preferredInterfaceModel: 'e1000' } },
    };
    const catalog = createInstancetypeCatalog([pref]);
    const vm = {
      metadata: { name: 'p', namespace: 'ns' },
      spec: {
        preference: { name: 'e1000-pref' },
        template: { spec: { domain: { devices: {} } } },
      },
    } as VirtualMachine;
    const expanded = expandVirtualMachine(
      defaultVirtualMachine(vm, cfg, { instancetypes: catalog }),
      catalog,
    );
    expect(expanded.errors).toEqual([]);
    expect(expanded.vm.spec.template.spec!.domain.devices.interfaces).toEqual([
      { name: 'default', bridge: {}, model: 'e1000' },
    ]);
  });

  it('gives a new VM a stable firmware serial, keeping one the VM sets (upstream generates one per new VM)', () => {
    const vm = fixture<VirtualMachine>('vm-containerdisk.yaml');
    const serial = defaultVirtualMachine(vm, cfg).spec.template.spec!.domain.firmware!.serial!;
    expect(serial).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(defaultVirtualMachine(vm, cfg).spec.template.spec!.domain.firmware!.serial).toBe(serial);
    const other = { ...vm, metadata: { ...vm.metadata, name: 'other' } };
    expect(defaultVirtualMachine(other, cfg).spec.template.spec!.domain.firmware!.serial).not.toBe(serial);
    vm.spec.template.spec!.domain.firmware = { serial: 'MINE-1' };
    expect(defaultVirtualMachine(vm, cfg).spec.template.spec!.domain.firmware!.serial).toBe('MINE-1');
  });

  it('turns running into runStrategy', () => {
    const vm = fixture<VirtualMachine>('vm-containerdisk.yaml');
    delete vm.spec.runStrategy;
    vm.spec.running = true;
    const out = defaultVirtualMachine(vm, cfg);
    expect(out.spec.runStrategy).toBe('Always');
    expect(out.spec.running).toBeUndefined();
    vm.spec.running = false;
    expect(defaultVirtualMachine(vm, cfg).spec.runStrategy).toBe('Halted');
  });

  it('leaves both running and runStrategy for validation to reject', () => {
    const vm = fixture<VirtualMachine>('vm-containerdisk.yaml');
    vm.spec.running = true;
    const out = defaultVirtualMachine(vm, cfg);
    expect(out.spec.running).toBe(true);
    expect(out.spec.runStrategy).toBe('Halted');
  });

  it('defaults instancetype and preference kinds to the cluster kinds', () => {
    const vm = fixture<VirtualMachine>('vm-large-virtio.yaml');
    delete vm.spec.instancetype?.kind;
    delete vm.spec.preference?.kind;
    const out = defaultVirtualMachine(vm, cfg);
    expect(out.spec.instancetype?.kind).toBe('VirtualMachineClusterInstancetype');
    expect(out.spec.preference?.kind).toBe('VirtualMachineClusterPreference');
  });

  it("takes the preference's machine type and architecture", () => {
    const pref = fixtureObjects('preference-windows.yaml')[0].object as { spec: Record<string, unknown> };
    pref.spec.machine = { preferredMachineType: 'pc-q35-7.2' };
    const catalog = createInstancetypeCatalog([pref]);
    const out = defaultVirtualMachine(fixture<VirtualMachine>('vm-large-windows.yaml'), cfg, {
      instancetypes: catalog,
    });
    expect(out.spec.template.spec?.domain.machine?.type).toBe('pc-q35-7.2');
  });
});

describe('migration defaulting', () => {
  it('adds the VMI selector label and the finalizer', () => {
    const out = defaultVirtualMachineInstanceMigration(
      fixture<VirtualMachineInstanceMigration>('migration.yaml'),
    );
    expect(out.metadata?.labels).toEqual({ 'kubevirt.io/vmi-name': 'vmi-migratable' });
    expect(out.metadata?.finalizers).toEqual(['kubevirt.io/migrationJobFinalize']);
  });
});
