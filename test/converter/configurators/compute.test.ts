/** Compute configurators: clock, hypervisor features, sysinfo, os, reboot policy, hypervisor type, launch security, controllers (cpu, iothreads and memory: cpu-memory.test.ts). */
import { describe, expect, it } from 'vitest';
import {
  clockConfigurator,
  controllersConfigurator,
  disksConfigurator,
  hypervisorConfigurator,
  hypervisorFeaturesConfigurator,
  inputsConfigurator,
  iothreadsConfigurator,
  launchSecurityConfigurator,
  metadataConfigurator,
  osConfigurator,
  rebootPolicyConfigurator,
  sysinfoConfigurator,
} from '../../../src/converter/configurators';
import { testContext } from '../support/contexts';
import { run, vmi } from '../support/run';

describe('clock configurator', () => {
  it('defaults to UTC and maps timers and a timezone', () => {
    expect(run([clockConfigurator], vmi()).clock).toEqual({ offset: 'utc' });
    const d = run(
      [clockConfigurator],
      vmi({ domain: { clock: { timezone: 'Europe/Paris', timer: { kvm: {}, hpet: { present: false } } } } }),
    );
    expect(d.clock).toEqual({
      offset: 'timezone',
      timezone: 'Europe/Paris',
      timer: [
        { name: 'hpet', present: 'no' },
        { name: 'kvmclock', present: 'yes' },
      ],
    });
    expect(() => run([clockConfigurator], vmi({ domain: { clock: { timezone: 'x"/><evil' } } }))).toThrow(
      /clock\.timezone: 'x"\/><evil' is not a timezone name/,
    );
  });
});

describe('hypervisor features configurator', () => {
  it('maps ACPI, APIC, SMM (only when enabled), Hyper-V, KVM hiding and pvspinlock', () => {
    const d = run(
      [hypervisorFeaturesConfigurator],
      vmi({
        domain: {
          features: {
            apic: {},
            smm: { enabled: false },
            kvm: { hidden: true },
            pvspinlock: {},
            hyperv: { relaxed: {}, spinlocks: {} },
          },
        },
      }),
    );
    expect(d.features).toEqual({
      acpi: {},
      apic: {},
      hyperv: { relaxed: { state: 'on' }, spinlocks: { state: 'on', retries: 4096 } },
      kvm: { hidden: { state: 'on' } },
      pvspinlock: { state: 'on' },
      vmport: { state: 'off' },
    });
    const on = run(
      [hypervisorFeaturesConfigurator],
      vmi({ domain: { features: { smm: {}, kvm: { hidden: false } } } }),
    );
    expect(on.features).toMatchObject({ smm: {}, kvm: { hidden: { state: 'off' } } });
    // No features block at all: no <features>, as upstream (admission always adds one).
    expect(run([hypervisorFeaturesConfigurator], vmi()).features).toBeUndefined();
  });

  it('uses Hyper-V passthrough and adds panic devices', () => {
    const d = run(
      [hypervisorFeaturesConfigurator],
      vmi({
        domain: {
          features: { hypervPassthrough: { enabled: true } },
          devices: { panicDevices: [{ model: 'isa' }] },
        },
      }),
    );
    expect(d.features!.hyperv).toEqual({ mode: 'passthrough' });
    expect(d.devices.panic).toEqual([{ model: 'isa' }]);
  });

  it('refuses Hyper-V TLB flush sub-features libvirt 9.0 cannot express', () => {
    expect(() =>
      run(
        [hypervisorFeaturesConfigurator],
        vmi({ domain: { features: { hyperv: { tlbflush: { direct: {} } } } } }),
      ),
    ).toThrow(
      'spec.domain.features.hyperv.tlbflush: direct and extended TLB flush are not supported by this converter (libvirt 9.0)',
    );
  });

  it('rejects a vendor id that is too long', () => {
    expect(() =>
      run(
        [hypervisorFeaturesConfigurator],
        vmi({ domain: { features: { hyperv: { vendorid: { vendorid: 'x'.repeat(13) } } } } }),
      ),
    ).toThrow(/hyperv\.vendorid\.vendorid: must be 1 to 12/);
  });
});

describe('sysinfo configurator', () => {
  it('writes the system and chassis blocks, rejecting line breaks', () => {
    const d = run(
      [metadataConfigurator, sysinfoConfigurator],
      vmi({
        domain: {
          firmware: { uuid: '5d307ca9-b3ef-428c-8861-06e72d69f223', serial: 'S<1>' },
          chassis: { asset: 'A&B' },
        },
      }),
    );
    expect(d.sysinfo).toEqual({
      type: 'smbios',
      system: {
        entry: [
          { name: 'uuid', value: '5d307ca9-b3ef-428c-8861-06e72d69f223' },
          { name: 'serial', value: 'S<1>' },
          { name: 'manufacturer', value: 'KubeVirt' },
          { name: 'family', value: 'KubeVirt' },
          { name: 'product', value: 'None' },
        ],
      },
      chassis: { entry: [{ name: 'asset', value: 'A&B' }] },
    });
    expect(() => run([sysinfoConfigurator], vmi({ domain: { firmware: { serial: 'a\nb' } } }))).toThrow(
      'spec.domain.firmware.serial: must be a single line (no line breaks)',
    );
  });
});

describe('os configurator', () => {
  it('refuses a guest architecture the host does not have', () => {
    expect(() => run([osConfigurator], vmi({ architecture: 'arm64' }))).toThrow(
      'spec.architecture: arm64 guests cannot run on this x86_64 host',
    );
    expect(run([osConfigurator], vmi({ architecture: 'amd64' })).os.type.arch).toBe('x86_64');
  });

  it('loads a SLIC table from its secret volume, and refuses MSDM and non-secret volumes', () => {
    const acpi = (ref: object, vol: object) =>
      vmi({ volumes: [{ name: 'tables', ...vol }], domain: { firmware: { acpi: ref } } });
    expect(
      run([osConfigurator], acpi({ slicNameRef: 'tables' }, { secret: { secretName: 's' } })).os.acpi,
    ).toEqual({
      table: [{ type: 'slic', value: '/var/run/kubevirt-private/secret/tables/slic.bin' }],
    });
    expect(() =>
      run([osConfigurator], acpi({ msdmNameRef: 'tables' }, { secret: { secretName: 's' } })),
    ).toThrow(/firmware\.acpi\.msdmNameRef: MSDM tables need/);
    expect(() =>
      run([osConfigurator], acpi({ slicNameRef: 'tables' }, { configMap: { name: 'c' } })),
    ).toThrow("spec.domain.firmware.acpi.slicNameRef: volume 'tables' must be a secret volume");
  });

  it('boots BIOS by default, leaving the boot device to libvirt', () => {
    expect(run([osConfigurator], vmi()).os).toEqual({
      type: { arch: 'x86_64', machine: 'q35', value: 'hvm' },
      smbios: { mode: 'sysinfo' },
    });
  });

  it('puts SeaBIOS on the serial console and adds a boot menu for paused starts', () => {
    const d = run(
      [osConfigurator],
      vmi({ startStrategy: 'Paused', domain: { firmware: { bootloader: { bios: { useSerial: true } } } } }),
    );
    expect(d.os.bios).toEqual({ useserial: 'yes' });
    expect(d.os.bootmenu).toEqual({ enable: 'yes', timeout: 10000 });
  });

  it("boots SEV-SNP guests from upstream's stateless OVMF.amdsev.fd ROM without NVRAM", () => {
    const snp = vmi({
      domain: { launchSecurity: { snp: {} }, firmware: { bootloader: { efi: { secureBoot: false } } } },
    });
    const d = run([osConfigurator], snp);
    expect(d.os.loader).toEqual({
      readonly: 'yes',
      secure: 'no',
      type: 'rom',
      value: '/usr/share/OVMF/OVMF.amdsev.fd',
    });
    expect(d.os.nvram).toBeUndefined();
    const own = testContext({
      firmware: { ...testContext().firmware, efiCodeSNP: '/opt/edk2/OVMF.amdsev.fd' },
    });
    expect(run([osConfigurator], snp, own).os.loader!.value).toBe('/opt/edk2/OVMF.amdsev.fd');
  });

  it('uses the SecureBoot OVMF pair and requires SMM for it', () => {
    const efi = { bootloader: { efi: { secureBoot: true } } };
    const d = run([osConfigurator], vmi({ domain: { firmware: efi, features: { smm: {} } } }));
    expect(d.os.loader).toEqual({
      readonly: 'yes',
      secure: 'yes',
      type: 'pflash',
      value: '/usr/share/OVMF/OVMF_CODE_4M.secboot.fd',
    });
    expect(d.os.nvram).toEqual({
      template: '/usr/share/OVMF/OVMF_VARS_4M.ms.fd',
      value: '/var/run/kubevirt-private/libvirt/qemu/nvram/t_VARS.fd',
    });
    expect(() => run([osConfigurator], vmi({ domain: { firmware: efi } }))).toThrow(
      'spec.domain.firmware.bootloader.efi.secureBoot: SecureBoot requires SMM: set spec.domain.features.smm',
    );
  });

  it('boots a kernel directly and refuses unsafe kernel arguments and paths', () => {
    const kb = (kernelArgs: string, kernelPath = '/boot/vmlinuz') =>
      vmi({ domain: { firmware: { kernelBoot: { kernelArgs, container: { image: 'k', kernelPath } } } } });
    const d = run([osConfigurator], kb(`console=ttyS0 a="<b>&'"`));
    expect(d.os).toMatchObject({
      kernel: '/var/run/kubevirt-ephemeral-disks/kernel-boot/boot/vmlinuz',
      cmdline: `console=ttyS0 a="<b>&'"`,
    });
    expect(d.os.boot).toBeUndefined();
    expect(() => run([osConfigurator], kb('a\nb'))).toThrow(
      'spec.domain.firmware.kernelBoot.kernelArgs: must be a single line (no line breaks)',
    );
    expect(() => run([osConfigurator], kb('a\u0007'))).toThrow(
      /kernelArgs: must not contain control characters \(found U\+0007\)/,
    );
    expect(() => run([osConfigurator], kb('x', '/boot/../../etc/shadow'))).toThrow(
      /container\.kernelPath: must not contain/,
    );
  });
});

describe('reboot policy and hypervisor configurators', () => {
  it('destroys on reboot with Terminate', () => {
    expect(run([rebootPolicyConfigurator], vmi({ domain: { rebootPolicy: 'Terminate' } })).on_reboot).toBe(
      'destroy',
    );
    expect(run([rebootPolicyConfigurator], vmi()).on_reboot).toBe('restart');
  });
  it('picks kvm, then qemu when emulation is allowed, else fails clearly', () => {
    expect(run([hypervisorConfigurator], vmi()).type).toBe('kvm');
    expect(
      run([hypervisorConfigurator], vmi(), testContext({ kvmAvailable: false, allowEmulation: true })).type,
    ).toBe('qemu');
    expect(() => run([hypervisorConfigurator], vmi(), testContext({ kvmAvailable: false }))).toThrow(
      /spec: KVM is not usable on this host and software emulation is not allowed/,
    );
  });
});

describe('launch security configurator', () => {
  it('encodes SEV, SEV-ES and SEV-SNP policies and leaves memory unlocked, as upstream', () => {
    const sev = run([launchSecurityConfigurator], vmi({ domain: { launchSecurity: { sev: {} } } }));
    expect(sev.launchSecurity).toEqual({ type: 'sev', cbitpos: 51, reducedPhysBits: 1, policy: '0x1' });
    // Upstream's LaunchSecurity configurator adds no <memoryBacking><locked/>.
    expect(sev.memoryBacking).toBeUndefined();
    expect(
      run(
        [launchSecurityConfigurator],
        vmi({ domain: { launchSecurity: { sev: { policy: { encryptedState: true } } } } }),
      ).launchSecurity!.policy,
    ).toBe('0x5');
    expect(
      run([launchSecurityConfigurator], vmi({ domain: { launchSecurity: { snp: {} } } })).launchSecurity,
    ).toMatchObject({ type: 'sev-snp', policy: '0x30000' });
    expect(() => run([launchSecurityConfigurator], vmi({ domain: { launchSecurity: { tdx: {} } } }))).toThrow(
      'spec.domain.launchSecurity.tdx: Intel TDX is not supported by this converter yet',
    );
    expect(() =>
      run(
        [launchSecurityConfigurator],
        vmi({ domain: { launchSecurity: { sev: {} } } }),
        testContext({ sev: undefined }),
      ),
    ).toThrow(/launchSecurity: the host does not support AMD SEV/);
  });
});

describe('controllers configurator', () => {
  it('adds qemu-xhci only when something uses USB, then scsi (hotplug) and virtio-serial (console)', () => {
    expect(run([controllersConfigurator], vmi()).devices.controller).toEqual([
      { type: 'usb', index: 0, model: 'none' },
      { type: 'scsi', index: 0, model: 'virtio-non-transitional' },
      { type: 'virtio-serial', index: 0, model: 'virtio-non-transitional' },
    ]);
    const usb = run(
      [inputsConfigurator, controllersConfigurator],
      vmi({
        domain: {
          devices: {
            disableHotplug: true,
            autoattachSerialConsole: false,
            inputs: [{ name: 't', type: 'tablet' }],
          },
        },
      }),
    );
    expect(usb.devices.controller).toEqual([{ type: 'usb', index: 0, model: 'qemu-xhci' }]);
  });

  it('gives the SCSI controller an IO thread and a queue per vCPU only for a dedicated-IO-thread SCSI disk (upstream shouldConfigSCSIThread)', () => {
    const scsi = (dedicated: boolean) =>
      run(
        [disksConfigurator, controllersConfigurator, iothreadsConfigurator],
        vmi({
          volumes: ['v', 's'].map((name) => ({ name, emptyDisk: { capacity: '1Gi' } })),
          domain: {
            ioThreadsPolicy: 'shared',
            cpu: { cores: 2 },
            devices: {
              disks: [
                { name: 'v', disk: { bus: 'virtio' } },
                { name: 's', disk: { bus: 'scsi' }, dedicatedIOThread: dedicated },
              ],
            },
          },
        }),
      ).devices.controller!.find((c) => c.type === 'scsi')!.driver;
    expect(scsi(false)).toBeUndefined();
    // The thread after the shared virtio disks' round robin: one pool thread, so thread 1.
    expect(scsi(true)).toEqual({ queues: 2, iothread: 1 });
  });
});
