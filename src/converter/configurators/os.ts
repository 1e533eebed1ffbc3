/**
 * `<os>`: machine type and arch, firmware (BIOS by default; EFI from OVMF with or without
 * SecureBoot, with its NVRAM copy kept persistent when asked), direct kernel boot, boot
 * order fallback and SMBIOS mode.
 */
import type { Configurator, Conversion } from '../conversion';
import type { OS } from '../domain/types';

function efi(c: Conversion, os: OS): void {
  const efi = c.spec.domain.firmware?.bootloader?.efi;
  if (!efi) return;
  const fw = c.ctx.firmware;
  const secure = efi.secureBoot !== false && !c.launchSecurity;
  if (secure) {
    const smm = c.spec.domain.features?.smm;
    if (!smm || smm.enabled === false) {
      c.fail(
        'spec.domain.firmware.bootloader.efi.secureBoot',
        'SecureBoot requires SMM: set spec.domain.features.smm',
      );
    }
  }
  const code = c.launchSecurity ? (fw.efiCodeSEV ?? fw.efiCode) : secure ? fw.efiCodeSecureBoot : fw.efiCode;
  const vars = secure ? fw.efiVarsSecureBoot : fw.efiVars;
  os.loader = { readonly: 'yes', secure: secure ? 'yes' : 'no', type: 'pflash', value: code };
  const dir = efi.persistent
    ? `${c.ctx.paths.persistentStateDir}/qemu/nvram`
    : `${c.ctx.paths.libvirtRunDir}/qemu/nvram`;
  os.nvram = { template: vars, value: `${dir}/${c.name}_VARS.fd` };
}

function kernelBoot(c: Conversion, os: OS): void {
  const kb = c.spec.domain.firmware?.kernelBoot;
  if (!kb) return;
  const base = 'spec.domain.firmware.kernelBoot';
  const ct = kb.container;
  if (ct) {
    if (!ct.kernelPath && !ct.initrdPath) c.fail(`${base}.container`, 'needs kernelPath or initrdPath');
    if (ct.kernelPath)
      os.kernel = c.ctx.paths.kernelBootDir + c.absolutePath(ct.kernelPath, `${base}.container.kernelPath`);
    if (ct.initrdPath)
      os.initrd = c.ctx.paths.kernelBootDir + c.absolutePath(ct.initrdPath, `${base}.container.initrdPath`);
  }
  if (kb.kernelArgs !== undefined && kb.kernelArgs !== '') {
    if (!ct?.kernelPath)
      c.fail(`${base}.kernelArgs`, 'kernel arguments need a kernel (container.kernelPath)');
    os.cmdline = c.line(kb.kernelArgs, `${base}.kernelArgs`);
  }
}

export const osConfigurator: Configurator = {
  name: 'os',
  configure(c: Conversion) {
    const vmiArch = c.spec.architecture;
    if (vmiArch) {
      const libvirtArch =
        { amd64: 'x86_64', arm64: 'aarch64', s390x: 's390x', ppc64le: 'ppc64le' }[vmiArch] ?? vmiArch;
      if (libvirtArch !== c.ctx.arch)
        c.fail(
          'spec.architecture',
          `${c.line(vmiArch, 'spec.architecture')} guests cannot run on this ${c.ctx.arch} host`,
        );
    }
    if (c.spec.domain.firmware?.acpi) {
      c.fail('spec.domain.firmware.acpi', 'ACPI SLIC/MSDM tables are not supported by this converter yet');
    }
    const machine = c.spec.domain.machine?.type || c.ctx.defaultMachineType;
    c.line(machine, 'spec.domain.machine.type');
    if (!/^[A-Za-z0-9._-]+$/.test(machine))
      c.fail('spec.domain.machine.type', `'${machine}' is not a machine type name`);
    const os: OS = { type: { arch: c.ctx.arch, machine, value: 'hvm' } };
    efi(c, os);
    kernelBoot(c, os);
    if (c.spec.domain.firmware?.bootloader?.bios?.useSerial) {
      // SeaBIOS prints to the serial console; libvirt spells this <bios useserial="yes"/>,
      // which this model does not carry: refuse rather than silently drop it.
      c.fail('spec.domain.firmware.bootloader.bios.useSerial', 'is not supported by this converter yet');
    }
    const devs = c.spec.domain.devices;
    const hasBootOrder = [...(devs.disks ?? []), ...(devs.interfaces ?? [])].some(
      (d) => d.bootOrder !== undefined,
    );
    // Without per-device boot order libvirt needs an OS-level one (the two cannot mix).
    if (!hasBootOrder && !os.kernel) os.boot = [{ dev: 'hd' }];
    os.smbios = { mode: 'sysinfo' };
    c.domain.os = os;
  },
};
