/**
 * Per-architecture VMI rules (upstream's `ValidateVirtualMachineInstancePerArch` and the
 * webhooks' amd64/arm64/s390x settings): devices and boot options QEMU does not offer on
 * that architecture. Applied to VMIs after defaulting, when the architecture is known.
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec } from '../generated/types';

function amd64(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const errs: FieldError[] = [];
  const devices = spec.domain.devices;
  const wd = devices.watchdog;
  if (wd && (!wd.i6300esb || wd.diag288)) {
    errs.push(
      fieldError(
        field.child('domain', 'devices', 'watchdog'),
        'amd64 only supports I6300ESB watchdog device',
        'FieldValueNotSupported',
      ),
    );
  }
  const video = devices.video;
  if (video && !['vga', 'cirrus', 'virtio', 'ramfb', 'bochs'].includes(video.type ?? '')) {
    errs.push(
      fieldError(
        field.child('domain', 'devices', 'video', 'type'),
        `video model '${video.type ?? ''}' is not supported on amd64 architecture`,
        'FieldValueNotSupported',
      ),
    );
  }
  return errs;
}

function arm64(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const errs: FieldError[] = [];
  const bl = spec.domain.firmware?.bootloader;
  if (bl?.bios) {
    errs.push(
      fieldError(
        field.child('domain', 'firmware', 'bootloader', 'bios'),
        'Arm64 does not support bios boot, please change to uefi boot',
        'FieldValueNotSupported',
      ),
    );
  }
  if (bl?.efi && bl.efi.secureBoot !== false) {
    errs.push(
      fieldError(
        field.child('domain', 'firmware', 'bootloader', 'efi', 'secureboot'),
        'UEFI secure boot is currently not supported on aarch64 Arch',
        'FieldValueNotSupported',
      ),
    );
  }
  const model = spec.domain.cpu?.model;
  if (model && model !== 'host-passthrough') {
    errs.push(
      fieldError(
        field.child('domain', 'cpu', 'model'),
        'currently, host-passthrough is the only model supported on Arm64',
        'FieldValueNotSupported',
      ),
    );
  }
  const ok = (bus: string | undefined) => !bus || bus === 'virtio' || bus === 'scsi';
  (spec.domain.devices.disks ?? []).forEach((disk, i) => {
    for (const [target, value] of [
      ['disk', disk.disk],
      ['cdrom', disk.cdrom],
      ['lun', disk.lun],
    ] as const) {
      if (value && !ok(value.bus)) {
        errs.push(
          fieldError(
            field.child('domain', 'devices', 'disks').index(i).child(target, 'bus'),
            'Arm64 not support this disk bus type, please use virtio or scsi',
            'FieldValueNotSupported',
          ),
        );
      }
    }
  });
  if (spec.domain.devices.watchdog) {
    errs.push(
      fieldError(
        field.child('domain', 'devices', 'watchdog'),
        'Arm64 not support Watchdog device',
        'FieldValueNotSupported',
      ),
    );
  }
  if (spec.domain.devices.sound) {
    errs.push(
      fieldError(
        field.child('domain', 'devices', 'sound'),
        'Arm64 not support sound device',
        'FieldValueNotSupported',
      ),
    );
  }
  const video = spec.domain.devices.video;
  if (video && !['virtio', 'ramfb'].includes(video.type ?? '')) {
    errs.push(
      fieldError(
        field.child('domain', 'devices', 'video', 'type'),
        `video model '${video.type ?? ''}' is not supported on arm64 architecture`,
        'FieldValueNotSupported',
      ),
    );
  }
  return errs;
}

/** Upstream's s390x rule (virtio only), and libvirt's models on other architectures. */
function videoModel(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  arch: string,
  allowed: readonly string[],
): FieldError[] {
  const video = spec.domain.devices.video;
  if (!video || allowed.includes(video.type ?? '')) return [];
  return [
    fieldError(
      field.child('domain', 'devices', 'video', 'type'),
      `video model '${video.type ?? ''}' is not supported on ${arch} architecture`,
      'FieldValueNotSupported',
    ),
  ];
}

/** The rules of the VMI's architecture; unknown architectures are reported. */
export function validateArchitectureSettings(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
): FieldError[] {
  switch (spec.architecture) {
    case 'amd64':
      return amd64(field, spec);
    case 'arm64':
      return arm64(field, spec);
    case 's390x':
      return videoModel(field, spec, 's390x', ['virtio']);
    case 'ppc64le':
      // No upstream rule; the models libvirt offers QEMU's pseries machine.
      return videoModel(field, spec, 'ppc64le', ['vga', 'virtio', 'bochs']);
    default:
      return [
        fieldError(field.child('architecture'), `unsupported architecture: ${spec.architecture ?? ''}`),
      ];
  }
}
