/**
 * Architecture-specific defaults (upstream pkg/defaults/{amd64,arm64,s390x}.go): the disk
 * bus for disks that name none (SATA on amd64, virtio elsewhere), the CPU model, the
 * bootloader (UEFI on arm64) and the watchdog action.
 */
import type { VirtualMachineInstanceSpec } from '../generated/types';

/** The bus given to disks, CD-ROMs and LUNs without one, per architecture. */
export function defaultDiskBus(arch: string): string {
  // amd64: SATA works out of the box in every guest OS (upstream's choice; IDE is not
  // supported on q35). arm64 and s390x have no SATA controller in QEMU.
  return arch === 'amd64' || arch === '' ? 'sata' : 'virtio';
}

function setDiskBus(spec: VirtualMachineInstanceSpec, bus: string): void {
  for (const disk of spec.domain.devices.disks ?? []) {
    if (disk.disk && !disk.disk.bus) disk.disk.bus = bus;
    if (disk.cdrom && !disk.cdrom.bus) disk.cdrom.bus = bus;
    if (disk.lun && !disk.lun.bus) disk.lun.bus = bus;
  }
}

/** Applies the architecture's defaults in place (callers pass a copy). */
export function setArchDefaults(spec: VirtualMachineInstanceSpec, arch: string): void {
  setDiskBus(spec, defaultDiskBus(arch));
  const domain = spec.domain;
  if (arch === 'arm64') {
    domain.cpu ??= {};
    domain.cpu.model ||= 'host-passthrough';
    domain.firmware ??= {};
    if (!domain.firmware.bootloader) domain.firmware.bootloader = { efi: {} };
    const efi = domain.firmware.bootloader.efi;
    if (efi && efi.secureBoot === undefined) efi.secureBoot = false;
  }
  const wd = domain.devices.watchdog;
  if (arch === 'amd64' && wd) {
    wd.i6300esb ??= {};
    wd.i6300esb.action ||= 'reset';
  }
}
