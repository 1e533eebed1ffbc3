/**
 * Applying a preference to a VMI spec (upstream pkg/instancetype/preference/apply):
 * preferences only fill what the VM leaves unset, so they never conflict.
 */
import type {
  ObjectMeta,
  VirtualMachineInstanceSpec,
  VirtualMachinePreferenceSpec,
} from '../generated/types';

function copy<T>(v: T): T {
  return structuredClone(v);
}

function applyDevices(p: VirtualMachinePreferenceSpec, spec: VirtualMachineInstanceSpec): void {
  const pd = p.devices;
  if (!pd) return;
  const d = spec.domain.devices;
  if (pd.preferredAutoattachGraphicsDevice !== undefined)
    d.autoattachGraphicsDevice ??= pd.preferredAutoattachGraphicsDevice;
  if (pd.preferredAutoattachInputDevice !== undefined)
    d.autoattachInputDevice ??= pd.preferredAutoattachInputDevice;
  if (pd.preferredAutoattachMemBalloon !== undefined)
    d.autoattachMemBalloon ??= pd.preferredAutoattachMemBalloon;
  if (pd.preferredAutoattachPodInterface !== undefined)
    d.autoattachPodInterface ??= pd.preferredAutoattachPodInterface;
  if (pd.preferredAutoattachSerialConsole !== undefined) {
    d.autoattachSerialConsole ??= pd.preferredAutoattachSerialConsole;
  }
  if (pd.preferredUseVirtioTransitional !== undefined)
    d.useVirtioTransitional ??= pd.preferredUseVirtioTransitional;
  if (pd.preferredBlockMultiQueue !== undefined) d.blockMultiQueue ??= pd.preferredBlockMultiQueue;
  if (pd.preferredNetworkInterfaceMultiQueue !== undefined) {
    d.networkInterfaceMultiqueue ??= pd.preferredNetworkInterfaceMultiQueue;
  }
  if (pd.preferredDisableHotplug !== undefined) d.disableHotplug ??= pd.preferredDisableHotplug;
  if (pd.preferredTPM && !d.tpm) d.tpm = copy(pd.preferredTPM);
  if (pd.preferredRng && !d.rng) d.rng = copy(pd.preferredRng);
  if (pd.preferredSoundModel && d.sound && !d.sound.model) d.sound.model = pd.preferredSoundModel;
  if (pd.preferredVideoType && !d.video) d.video = { type: pd.preferredVideoType };
  for (const disk of d.disks ?? []) {
    // A disk with no target at all is a disk (the API default) and takes the disk bus.
    if (!disk.disk && !disk.cdrom && !disk.lun) disk.disk = {};
    if (disk.disk && !disk.disk.bus && pd.preferredDiskBus) disk.disk.bus = pd.preferredDiskBus;
    if (disk.cdrom && !disk.cdrom.bus && pd.preferredCdromBus) disk.cdrom.bus = pd.preferredCdromBus;
    if (disk.lun && !disk.lun.bus && pd.preferredLunBus) disk.lun.bus = pd.preferredLunBus;
    if (!disk.io && pd.preferredDiskIO) disk.io = pd.preferredDiskIO;
    if (!disk.cache && pd.preferredDiskCache) disk.cache = pd.preferredDiskCache;
    if (
      disk.dedicatedIOThread === undefined &&
      pd.preferredDiskDedicatedIoThread !== undefined &&
      disk.disk
    ) {
      disk.dedicatedIOThread = pd.preferredDiskDedicatedIoThread;
    }
    if (!disk.blockSize && pd.preferredDiskBlockSize) disk.blockSize = copy(pd.preferredDiskBlockSize);
  }
  for (const iface of d.interfaces ?? []) {
    if (!iface.model && pd.preferredInterfaceModel) iface.model = pd.preferredInterfaceModel;
  }
  for (const input of d.inputs ?? []) {
    if (!input.bus && pd.preferredInputBus) input.bus = pd.preferredInputBus;
    if (!input.type && pd.preferredInputType) input.type = pd.preferredInputType;
  }
  for (const panic of d.panicDevices ?? []) {
    if (!panic.model && pd.preferredPanicDeviceModel) panic.model = pd.preferredPanicDeviceModel;
  }
}

function applyFeatures(p: VirtualMachinePreferenceSpec, spec: VirtualMachineInstanceSpec): void {
  const pf = p.features;
  if (!pf) return;
  spec.domain.features ??= {};
  const f = spec.domain.features;
  if (pf.preferredAcpi && !f.acpi) f.acpi = copy(pf.preferredAcpi);
  if (pf.preferredApic && !f.apic) f.apic = copy(pf.preferredApic);
  if (pf.preferredHyperv && !f.hyperv) f.hyperv = copy(pf.preferredHyperv);
  if (pf.preferredKvm && !f.kvm) f.kvm = copy(pf.preferredKvm);
  if (pf.preferredPvspinlock && !f.pvspinlock) f.pvspinlock = copy(pf.preferredPvspinlock);
  if (pf.preferredSmm && !f.smm) f.smm = copy(pf.preferredSmm);
}

function applyFirmware(p: VirtualMachinePreferenceSpec, spec: VirtualMachineInstanceSpec): void {
  const pf = p.firmware;
  if (!pf) return;
  spec.domain.firmware ??= {};
  const fw = spec.domain.firmware;
  if (fw.bootloader) return;
  if (pf.preferredUseBios) fw.bootloader = { bios: { useSerial: pf.preferredUseBiosSerial } };
  else if (pf.preferredEfi) fw.bootloader = { efi: copy(pf.preferredEfi) };
  else if (pf.preferredUseEfi) fw.bootloader = { efi: { secureBoot: pf.preferredUseSecureBoot } };
}

/** Applies a preference to a VMI spec and template metadata, in place (callers pass copies). */
export function applyPreference(
  p: VirtualMachinePreferenceSpec,
  spec: VirtualMachineInstanceSpec,
  metadata: ObjectMeta,
): void {
  spec.domain.cpu ??= {};
  const cpu = spec.domain.cpu;
  for (const feature of p.cpu?.preferredCPUFeatures ?? []) {
    cpu.features ??= [];
    if (!cpu.features.some((f) => f.name === feature.name)) cpu.features.push(copy(feature));
  }
  applyDevices(p, spec);
  applyFeatures(p, spec);
  applyFirmware(p, spec);
  if (p.machine?.preferredMachineType) {
    spec.domain.machine ??= {};
    spec.domain.machine.type ||= p.machine.preferredMachineType;
  }
  if (p.clock && !spec.domain.clock) {
    spec.domain.clock = { ...copy(p.clock.preferredClockOffset ?? {}) };
    if (p.clock.preferredTimer) spec.domain.clock.timer = copy(p.clock.preferredTimer);
  }
  if (p.preferredSubdomain) spec.subdomain ||= p.preferredSubdomain;
  if (p.preferredTerminationGracePeriodSeconds !== undefined) {
    spec.terminationGracePeriodSeconds ??= p.preferredTerminationGracePeriodSeconds;
  }
  if (p.preferredArchitecture) spec.architecture ||= p.preferredArchitecture;
  if (p.preferredLaunchSecurity && !spec.domain.launchSecurity) {
    spec.domain.launchSecurity = copy(p.preferredLaunchSecurity);
  }
  for (const [k, v] of Object.entries(p.annotations ?? {})) {
    if (metadata.annotations?.[k] === undefined)
      metadata.annotations = { ...(metadata.annotations ?? {}), [k]: v };
  }
}
