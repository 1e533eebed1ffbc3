/**
 * `<os>`: machine type and arch, firmware (BIOS by default, optionally on the serial
 * console; EFI from OVMF with or without SecureBoot, NVRAM kept persistent when asked,
 * stateless ROM for SEV-SNP), direct kernel boot, ACPI tables, boot menu for paused starts
 * and SMBIOS mode. Like upstream it sets no OS boot device: libvirt defaults to the disk.
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
  if (c.launchSecurity === 'sev-snp') {
    // SNP guests boot upstream's stateless AMD SEV firmware: a ROM and no NVRAM.
    os.loader = { readonly: 'yes', secure: 'no', type: 'rom', value: fw.efiCodeSNP ?? code };
    return;
  }
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

/** ACPI tables from secret volumes: SLIC as `<acpi><table type="slic">` (libvirt 9.0 has no MSDM). */
function acpiTables(c: Conversion, os: OS): void {
  const acpi = c.spec.domain.firmware?.acpi;
  if (!acpi) return;
  const base = 'spec.domain.firmware.acpi';
  if (!acpi.slicNameRef && !acpi.msdmNameRef) c.fail(base, 'no ACPI tables were set; expecting at least one');
  if (acpi.msdmNameRef) {
    c.fail(`${base}.msdmNameRef`, 'MSDM tables need <acpi><table type="msdm">, which libvirt 9.0 lacks');
  }
  const ref = acpi.slicNameRef!;
  const i = (c.spec.volumes ?? []).findIndex((v) => v.name === ref);
  if (i < 0)
    c.fail(`${base}.slicNameRef`, `no volume named '${c.line(ref, `${base}.slicNameRef`)}' in spec.volumes`);
  if (!c.spec.volumes![i].secret) c.fail(`${base}.slicNameRef`, `volume '${ref}' must be a secret volume`);
  const dir = `${c.ctx.paths.secretSourceDir}/${c.segment(ref, `${base}.slicNameRef`)}`;
  os.acpi = { table: [{ type: 'slic', value: `${dir}/slic.bin` }] };
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
    const machine = c.spec.domain.machine?.type || c.ctx.defaultMachineType;
    c.line(machine, 'spec.domain.machine.type');
    if (!/^[A-Za-z0-9._-]+$/.test(machine))
      c.fail('spec.domain.machine.type', `'${machine}' is not a machine type name`);
    const os: OS = { type: { arch: c.ctx.arch, machine, value: 'hvm' } };
    efi(c, os);
    kernelBoot(c, os);
    if (c.spec.domain.firmware?.bootloader?.bios?.useSerial) os.bios = { useserial: 'yes' };
    // A VMI that starts paused gets a boot menu, to give time to reach the firmware.
    if (c.spec.startStrategy === 'Paused') os.bootmenu = { enable: 'yes', timeout: 10000 };
    acpiTables(c, os);
    os.smbios = { mode: 'sysinfo' };
    c.domain.os = os;
  },
};
