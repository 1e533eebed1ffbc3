/**
 * The API's own field defaults (upstream's generated `SetObjectDefaults_VirtualMachineInstance`
 * from staging/src/kubevirt.io/api/core/v1/defaults.go): present feature and timer blocks
 * are enabled, disks without a target become disks, CD-ROMs are read-only with a closed
 * tray, watchdogs get a model and the `reset` action, inputs are USB tablets, probes get
 * Kubernetes' timing defaults.
 */
import type { FeatureState, Probe, Timer, VirtualMachineInstanceSpec } from '../generated/types';

function enable<T extends { enabled?: boolean }>(fs: T | undefined): void {
  if (fs && fs.enabled === undefined) fs.enabled = true;
}

function enableTimers(timer: Timer | undefined): void {
  if (!timer) return;
  for (const t of [timer.hpet, timer.pit, timer.rtc, timer.kvm, timer.hyperv]) {
    if (t && t.present === undefined) t.present = true;
  }
}

/** Kubernetes probe timing defaults. */
export function setProbeDefaults(probe: Probe | undefined): void {
  if (!probe) return;
  if (!probe.timeoutSeconds || probe.timeoutSeconds < 1) probe.timeoutSeconds = 1;
  if (!probe.periodSeconds || probe.periodSeconds < 1) probe.periodSeconds = 10;
  if (!probe.successThreshold || probe.successThreshold < 1) probe.successThreshold = 1;
  if (!probe.failureThreshold || probe.failureThreshold < 1) probe.failureThreshold = 3;
}

/** Applies the API field defaults to a VMI spec in place (callers pass a copy). */
export function setObjectDefaults(spec: VirtualMachineInstanceSpec, arch: string): void {
  const domain = spec.domain;
  domain.firmware ??= {};
  domain.features ??= {};
  const f = domain.features;
  enable(f.acpi);
  enable(f.apic);
  enable(f.smm);
  enable(f.pvspinlock);
  enable(f.hypervPassthrough);
  if (f.hyperv) {
    const h = f.hyperv as Record<string, FeatureState | undefined>;
    for (const key of [
      'relaxed',
      'vapic',
      'vpindex',
      'runtime',
      'synic',
      'reset',
      'frequencies',
      'reenlightenment',
      'ipi',
      'evmcs',
    ]) {
      enable(h[key]);
    }
    enable(f.hyperv.vendorid);
    enable(f.hyperv.tlbflush);
    enable(f.hyperv.tlbflush?.direct);
    enable(f.hyperv.tlbflush?.extended);
    if (f.hyperv.spinlocks) {
      enable(f.hyperv.spinlocks);
      if (f.hyperv.spinlocks.enabled && f.hyperv.spinlocks.spinlocks === undefined) {
        f.hyperv.spinlocks.spinlocks = 4096;
      }
    }
    if (f.hyperv.synictimer) {
      enable(f.hyperv.synictimer);
      enable(f.hyperv.synictimer.direct);
    }
  }
  enableTimers(domain.clock?.timer);

  const devices = domain.devices;
  for (const disk of devices.disks ?? []) {
    if (!disk.disk && !disk.cdrom && !disk.lun) disk.disk = {};
    if (disk.cdrom) {
      disk.cdrom.readonly ??= true;
      disk.cdrom.tray ||= 'closed';
    }
    enable(disk.blockSize?.matchVolume);
  }
  if (devices.watchdog) {
    const wd = devices.watchdog;
    if (arch === 's390x') wd.diag288 ??= {};
    else if (!wd.i6300esb && !wd.diag288) wd.i6300esb = {};
    if (wd.i6300esb && !wd.i6300esb.action) wd.i6300esb.action = 'reset';
    if (wd.diag288 && !wd.diag288.action) wd.diag288.action = 'reset';
  }
  for (const input of devices.inputs ?? []) {
    input.bus ||= 'usb';
    input.type ||= 'tablet';
  }
  setProbeDefaults(spec.readinessProbe);
  setProbeDefaults(spec.livenessProbe);
}
