import { describe, expect, it } from 'vitest';
import type { HostCapabilities } from '../../../src/drivers/driver';
import { chooseVirtType } from '../../../src/drivers/emulation';
import { DriverError } from '../../../src/drivers/errors';
import { emulationDriverFactory, libvirtDriverFactory } from '../../../src/drivers/libvirt-driver';
import { DriverRegistry } from '../../../src/drivers/registry';
import { minimalVmi } from '../../../src/testing';

const subject = 'VirtualMachineInstance ns/vm';

describe('chooseVirtType', () => {
  it('uses KVM whenever it is usable, even if emulation is allowed', () => {
    expect(
      chooseVirtType({
        capabilities: { kvmUsable: true, emulationAvailable: true },
        useEmulation: true,
        subject,
      }),
    ).toBe('kvm');
  });

  it('emulates only when KVM is unusable and emulation is allowed', () => {
    expect(
      chooseVirtType({
        capabilities: { kvmUsable: false, emulationAvailable: true },
        useEmulation: true,
        subject,
      }),
    ).toBe('qemu');
  });

  it('refuses without KVM when emulation is not allowed, saying what to set', () => {
    let err: unknown;
    try {
      chooseVirtType({
        capabilities: { kvmUsable: false, emulationAvailable: true },
        useEmulation: false,
        subject,
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DriverError);
    expect((err as DriverError).code).toBe('Unsupported');
    expect((err as DriverError).message).toMatch(
      /^VirtualMachineInstance ns\/vm: KVM is not usable .* set spec\.configuration\.developerConfiguration\.useEmulation: true/,
    );
  });

  it('refuses when QEMU cannot emulate the architecture', () => {
    expect(() =>
      chooseVirtType({
        capabilities: { kvmUsable: false, emulationAvailable: false },
        useEmulation: true,
        subject,
      }),
    ).toThrow('cannot emulate the guest architecture');
  });
});

describe('libvirt and emulation factories in the registry', () => {
  const caps = (kvmUsable: boolean): HostCapabilities => ({
    driver: 'libvirt',
    arch: 'x86_64',
    kvmUsable,
    emulationAvailable: true,
    cpuModels: [],
    cpuFeatures: [],
    maxVcpus: 4,
    memoryBytes: 1 << 30,
    hugepageSizesKiB: [],
    machineTypes: ['q35'],
  });
  const vmi = minimalVmi({ namespace: 'ns', name: 'vm' });

  it('picks libvirt (KVM) when KVM works, emulation when allowed, and explains a refusal', () => {
    const allow = new DriverRegistry([libvirtDriverFactory, emulationDriverFactory], [], {
      useEmulation: true,
    });
    expect(allow.select(vmi, caps(true)).name).toBe('libvirt');
    expect(allow.select(vmi, caps(false)).name).toBe('emulation');
    const deny = new DriverRegistry([libvirtDriverFactory, emulationDriverFactory], [], {});
    expect(() => deny.select(vmi, caps(false))).toThrow(
      'no registered driver can run it (libvirt: KVM is not usable on this host; emulation: software emulation is not allowed (set developerConfiguration.useEmulation: true))',
    );
  });

  it('rejects a non-string setting, naming it', async () => {
    const r = new DriverRegistry([libvirtDriverFactory], [], { settings: { libvirt: { uri: 42 } } });
    await expect(r.create('libvirt')).rejects.toThrow(
      'driver configuration: settings.libvirt.uri must be a string',
    );
  });
});
