/**
 * Device, firmware and security rules of a VMI spec (upstream's VMI create admitter and
 * the per-architecture webhooks): inputs, probes, firmware and kernel boot, SecureBoot
 * needing SMM, launchSecurity, sound, watchdog, and the devices behind feature gates
 * (host devices, DRA GPUs, VSOCK, downward metrics, persistent reservation and state).
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { Probe, VirtualMachineInstanceSpec } from '../generated/types';
import { countPodInterfaces } from './vmi-network';
import { validateAbsolutePath } from './vmi-storage';

const maxStrLen = 256;
const serialRe = /^[A-Za-z0-9_.+-]+$/;

/** Exactly one handler per probe; HTTP and TCP probes need the pod network. */
export function validateProbe(
  field: FieldPath,
  probe: Probe | undefined,
  hasPodNetwork: boolean,
): FieldError[] {
  if (!probe) return [];
  const errs: FieldError[] = [];
  const handlers = [probe.httpGet, probe.tcpSocket, probe.exec, probe.guestAgentPing].filter(
    (h) => h !== undefined,
  );
  if (handlers.length > 1) errs.push(fieldError(field, `${field} must have exactly one probe type set`));
  if (handlers.length < 1) {
    errs.push(
      fieldError(
        field,
        `either ${field.child('tcpSocket')}, ${field.child('exec')} or ${field.child('httpGet')} must be set if a ${field} is specified`,
        'FieldValueRequired',
      ),
    );
  }
  if (!hasPodNetwork) {
    for (const [name, handler] of [
      ['httpGet', probe.httpGet],
      ['tcpSocket', probe.tcpSocket],
    ] as const) {
      if (handler) {
        const p = field.child(name);
        errs.push(fieldError(p, `${p} is only allowed if the Pod Network is attached`));
      }
    }
  }
  return errs;
}

function validateFirmware(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const fw = spec.domain.firmware;
  if (!fw) return [];
  const errs: FieldError[] = [];
  const fp = field.child('domain', 'firmware');
  if (fw.serial) {
    const sp = fp.child('serial');
    if (fw.serial.length > maxStrLen) {
      errs.push(fieldError(sp, `${sp} must be less than or equal to ${maxStrLen} in length, if specified`));
    }
    if (!serialRe.test(fw.serial)) {
      errs.push(
        fieldError(sp, `${sp} must be made up of the following characters [A-Za-z0-9_.+-], if specified`),
      );
    }
  }
  if (fw.acpi) {
    // Upstream reports these at `spec.acpi`.
    const ap = field.child('acpi');
    const { slicNameRef, msdmNameRef } = fw.acpi;
    if (!slicNameRef && !msdmNameRef) {
      errs.push(fieldError(ap, 'ACPI was set but no SLIC nor MSDM volume reference was set'));
    }
    for (const [name, ref] of [
      ['slicNameRef', slicNameRef],
      ['msdmNameRef', msdmNameRef],
    ] as const) {
      if (!ref) continue;
      const vol = spec.volumes?.find((v) => v.name === ref);
      if (!vol) errs.push(fieldError(ap.child(name), `${ap} does not have a matching Volume.`));
      else if (!vol.secret)
        errs.push(fieldError(ap.child(name), `${ap} refers to Volume of unsupported type.`));
    }
  }
  const bl = fw.bootloader;
  if (bl?.efi && bl.bios) {
    const bp = fp.child('bootloader');
    errs.push(fieldError(bp, `${bp} has both EFI and BIOS configured, but they are mutually exclusive.`));
  }
  const kb = fw.kernelBoot;
  if (kb) {
    const kp = fp.child('kernelBoot');
    if (!kb.container) {
      if (kb.kernelArgs) {
        errs.push(
          fieldError(
            kp.child('kernelArgs'),
            'kernel arguments cannot be provided without an external kernel',
          ),
        );
      }
    } else {
      const cp = kp.child('container');
      if (!kb.container.image) {
        errs.push(fieldError(cp.child('image'), `${cp} must be defined with an image`, 'FieldValueRequired'));
      }
      if (!kb.container.initrdPath && !kb.container.kernelPath) {
        errs.push(
          fieldError(
            cp,
            `${cp} must be defined with at least one of the following: kernelPath, initrdPath`,
            'FieldValueRequired',
          ),
        );
      }
      if (kb.container.kernelPath)
        errs.push(...validateAbsolutePath(cp.child('kernelPath'), kb.container.kernelPath));
      if (kb.container.initrdPath)
        errs.push(...validateAbsolutePath(cp.child('initrdPath'), kb.container.initrdPath));
    }
  }
  const efi = bl?.efi;
  const smm = spec.domain.features?.smm;
  if (efi && efi.secureBoot !== false && (!smm || smm.enabled === false)) {
    const dp = field.child('domain');
    errs.push(
      fieldError(
        dp,
        `${dp} has EFI SecureBoot enabled. SecureBoot requires SMM, which is currently disabled.`,
      ),
    );
  }
  return errs;
}

function validateLaunchSecurity(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const ls = spec.domain.launchSecurity;
  if (!ls) return [];
  const lp = field.child('launchSecurity');
  const types: string[] = [];
  if (ls.sev) types.push('SEV');
  if (ls.snp) types.push('SNP');
  if (ls.tdx) types.push('TDX');
  if (types.length !== 1) {
    return [fieldError(lp, 'One and only one launchSecurity type can be set', 'FieldValueForbidden')];
  }
  const gate = ls.tdx ? FeatureGate.WorkloadEncryptionTDX : FeatureGate.WorkloadEncryptionSEV;
  if (!config.isFeatureGateEnabled(gate)) {
    return [fieldError(lp, `${gate} feature gate is not enabled in kubevirt-config`)];
  }
  const type = types[0];
  const errs: FieldError[] = [];
  const smm = spec.domain.features?.smm;
  if (ls.tdx && smm && smm.enabled !== false) errs.push(fieldError(lp, 'TDX does not work along with SMM'));
  const efi = spec.domain.firmware?.bootloader?.efi;
  if (!efi) {
    errs.push(fieldError(lp, `${type} requires OVMF (UEFI)`));
  } else {
    if ((ls.sev || ls.snp) && efi.secureBoot !== false) {
      errs.push(fieldError(lp, `${type} does not work along with SecureBoot`));
    }
    if ((ls.snp || ls.tdx) && efi.persistent === true) {
      errs.push(fieldError(lp, `${type} does not work along with Persistent EFI variables`));
    }
  }
  if (ls.sev?.attestation !== undefined && spec.startStrategy !== 'Paused') {
    errs.push(fieldError(lp, "SEV attestation requires VMI StartStrategy 'Paused'"));
  }
  for (const iface of spec.domain.devices.interfaces ?? []) {
    if (iface.bootOrder !== undefined) {
      errs.push(fieldError(lp, `${type} does not work with bootable NICs: ${iface.name}`));
    }
  }
  return errs;
}

function validateGatedDevices(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  const devices = spec.domain.devices;
  const dp = field.child('domain', 'devices');
  if (
    devices.hostDevices?.some((h) => h.deviceName) &&
    !config.isFeatureGateEnabled(FeatureGate.HostDevices)
  ) {
    errs.push(
      fieldError(field.child('HostDevices'), 'Host Devices feature gate is not enabled in kubevirt-config'),
    );
  }
  if (devices.gpus?.some((g) => g.deviceName) && !config.isFeatureGateEnabled(FeatureGate.GPU)) {
    errs.push(fieldError(field.child('GPUs'), 'GPU feature gate is not enabled in kubevirt-config'));
  }
  const claims = new Set((spec.resourceClaims ?? []).map((c) => c.name));
  for (const [kind, list, gate] of [
    ['gpus', devices.gpus ?? [], FeatureGate.GPUsWithDRA],
    ['hostDevices', devices.hostDevices ?? [], FeatureGate.HostDevicesWithDRA],
  ] as const) {
    list.forEach((d, idx) => {
      const p = dp.child(kind).index(idx);
      const dra = d.claimName !== undefined || d.requestName !== undefined;
      if (dra && d.deviceName) {
        errs.push(fieldError(p, `${p} must set either deviceName or claimName and requestName, not both`));
      } else if (!dra && !d.deviceName) {
        errs.push(
          fieldError(p, `${p} must set either deviceName or claimName and requestName`, 'FieldValueRequired'),
        );
      }
      if (!dra) return;
      if (!config.isFeatureGateEnabled(gate)) {
        errs.push(fieldError(p, `${gate} feature gate is not enabled in kubevirt-config`));
      }
      if (!d.claimName || !d.requestName) {
        errs.push(
          fieldError(p, `${p} needs both claimName and requestName when using DRA`, 'FieldValueRequired'),
        );
      } else if (!claims.has(d.claimName)) {
        errs.push(
          fieldError(
            p.child('claimName'),
            `${p.child('claimName')} '${d.claimName}' not found in ${field.child('resourceClaims')}.`,
          ),
        );
      }
    });
  }
  if (devices.autoattachVSOCK && !config.isFeatureGateEnabled(FeatureGate.VSOCK)) {
    errs.push(
      fieldError(
        dp.child('autoattachVSOCK'),
        `${FeatureGate.VSOCK} feature gate is not enabled in kubevirt-config`,
      ),
    );
  }
  if (devices.downwardMetrics !== undefined && !config.isFeatureGateEnabled(FeatureGate.DownwardMetrics)) {
    errs.push(
      fieldError(
        dp.child('downwardMetrics'),
        'downwardMetrics virtio serial is not allowed: DownwardMetrics feature gate is not enabled',
      ),
    );
  }
  if (
    devices.disks?.some((d) => d.lun?.reservation) &&
    !config.isFeatureGateEnabled(FeatureGate.PersistentReservation)
  ) {
    errs.push(
      fieldError(
        dp.child('disks', 'luns', 'reservation'),
        `${FeatureGate.PersistentReservation} feature gate is not enabled in kubevirt-config`,
      ),
    );
  }
  if (!config.isFeatureGateEnabled(FeatureGate.VMPersistentState)) {
    if (devices.tpm?.persistent) {
      errs.push(
        fieldError(
          dp.child('tpm', 'persistent'),
          `${FeatureGate.VMPersistentState} feature gate is not enabled in kubevirt-config`,
        ),
      );
    }
    if (spec.domain.firmware?.bootloader?.efi?.persistent) {
      errs.push(
        fieldError(
          field.child('domain', 'firmware', 'bootloader', 'efi', 'persistent'),
          `${FeatureGate.VMPersistentState} feature gate is not enabled in kubevirt-config`,
        ),
      );
    }
  }
  for (const fs of devices.filesystems ?? []) {
    const vol = spec.volumes?.find((v) => v.name === fs.name);
    if (vol?.persistentVolumeClaim || vol?.dataVolume) {
      if (!config.isFeatureGateEnabled(FeatureGate.VirtIOFSStorageVolumes)) {
        errs.push(
          fieldError(
            dp.child('filesystems'),
            'virtiofs is not allowed: virtiofs feature gate is not enabled for PVC',
          ),
        );
        break;
      }
    }
  }
  return errs;
}

function validateMiscDevices(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const errs: FieldError[] = [];
  const devices = spec.domain.devices;
  const dp = field.child('domain', 'devices');
  (devices.inputs ?? []).forEach((input, idx) => {
    const ip = dp.child('inputs').index(idx);
    if (input.bus && input.bus !== 'virtio' && input.bus !== 'usb') {
      errs.push(fieldError(ip.child('bus'), 'Input device can have only virtio or usb bus.'));
    }
    if (input.type !== 'tablet')
      errs.push(fieldError(ip.child('type'), 'Input device can have only tablet type.'));
  });
  const policy = spec.domain.ioThreadsPolicy;
  if (policy !== undefined && !['shared', 'auto', 'supplementalPool'].includes(policy)) {
    errs.push(fieldError(field.child('domain', 'ioThreadsPolicy'), `Invalid IOThreadsPolicy (${policy})`));
  }
  if (policy === 'supplementalPool' && !((spec.domain.ioThreads?.supplementalPoolThreadCount ?? 0) >= 1)) {
    errs.push(
      fieldError(
        field.child('domain', 'ioThreads', 'count'),
        'the number of iothreads needs to be set and positive for the dedicated policy',
      ),
    );
  }
  if (devices.sound) {
    const m = devices.sound.model;
    if (m && m !== 'ich9' && m !== 'ac97') {
      errs.push(
        fieldError(field.child('Sound'), "Sound device type is not supported. Options: 'ich9' or 'ac97'"),
      );
    }
    if (!devices.sound.name)
      errs.push(fieldError(field.child('Sound'), 'Sound device requires a name field.'));
  }
  const wd = devices.watchdog;
  if (wd?.i6300esb?.action && !['poweroff', 'reset', 'shutdown'].includes(wd.i6300esb.action)) {
    errs.push(
      fieldError(
        dp.child('watchdog', 'i6300esb', 'action'),
        `${dp.child('watchdog', 'i6300esb', 'action')} has invalid value ${wd.i6300esb.action}`,
      ),
    );
  }
  if (devices.video && devices.autoattachGraphicsDevice === false) {
    // Upstream reports this at `spec.video`.
    errs.push(
      fieldError(
        field.child('video'),
        'Video configuration is not allowed when autoattachGraphicsDevice is set to false',
      ),
    );
  }
  const arch = spec.architecture ?? '';
  if (devices.panicDevices?.length && (arch === 's390x' || arch === 'ppc64le')) {
    errs.push(
      fieldError(dp.child('panicDevices'), `custom panic devices are not supported on ${arch} architecture`),
    );
  }
  (devices.panicDevices ?? []).forEach((pd, idx) => {
    if (pd.model && !['hyperv', 'isa', 'pvpanic'].includes(pd.model)) {
      errs.push(
        fieldError(
          dp.child('panicDevices').index(idx).child('model'),
          `invalid PanicDeviceModel(${pd.model})`,
        ),
      );
    }
  });
  return errs;
}

/** Device, firmware and security rules. */
export function validateDevices(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const hasPodNetwork = (spec.networks ?? []).some((n) => n.pod) && countPodInterfaces(spec) > 0;
  return [
    ...validateMiscDevices(field, spec),
    ...validateProbe(field.child('readinessProbe'), spec.readinessProbe, hasPodNetwork),
    ...validateProbe(field.child('livenessProbe'), spec.livenessProbe, hasPodNetwork),
    // The launcher pod's liveness probe is this one: the API server refuses a pod whose
    // liveness successThreshold is not 1 (core/v1 validation), so refuse the VMI here.
    ...((spec.livenessProbe?.successThreshold ?? 1) > 1
      ? [
          fieldError(
            field.child('livenessProbe', 'successThreshold'),
            `${field.child('livenessProbe', 'successThreshold')} must be 1`,
          ),
        ]
      : []),
    ...validateFirmware(field, spec),
    ...validateGatedDevices(field, spec, config),
    ...validateLaunchSecurity(field, spec, config),
  ];
}
