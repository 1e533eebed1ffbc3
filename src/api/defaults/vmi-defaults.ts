/**
 * VirtualMachineInstance defaulting, as upstream's admission applies it (pkg/defaults and
 * the VMI mutating webhook). Pure: every function returns a new object.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { formatQuantity, parseQuantity, quantityIsZero, quantityValue } from '../config/quantity';
import { type FieldError, fieldError } from '../errors';
import type {
  Interface,
  Network,
  VirtualMachineInstance,
  VirtualMachineInstanceSpec,
} from '../generated/types';
import { cloneJson } from '../json-clone';
import { Finalizers, Labels } from '../labels';
import { setArchDefaults } from './arch-defaults';
import { firmwareUUIDForName } from './firmware-uuid';
import { setHypervFeatureDependencies } from './hyperv';
import { liveUpdateMemoryProblem } from './memory-hotplug';
import { setObjectDefaults } from './object-defaults';

/** Thrown when defaulting itself cannot proceed (e.g. the configured default interface is not permitted). */
export class DefaultingError extends Error {
  constructor(readonly errors: FieldError[]) {
    super(errors.map((e) => `${e.path}: ${e.message}`).join('; '));
    this.name = 'DefaultingError';
  }
}

/** Upstream's `v1.DefaultCPUModel`. */
export const DefaultCPUModel = 'host-model';
/** Grace period given to VMIs that set none, in seconds. */
export const DefaultTerminationGracePeriodSeconds = 30;
/** The unprivileged user virt-launcher runs QEMU as unless the Root feature gate is on. */
export const NonRootUID = 107;

/** Options of {@link defaultVirtualMachineInstance}. */
export interface VMIDefaultingOptions {
  /**
   * Creation time for the Pending phase transition timestamp upstream records; omitted
   * when not given, which keeps the function deterministic.
   */
  now?: Date;
}

function setResourceRequests(spec: VirtualMachineInstanceSpec, config: ClusterConfig): void {
  spec.domain.resources ??= {};
  const resources = spec.domain.resources;
  const limits = resources.limits ?? {};
  if (!quantityIsZero(limits.cpu) && quantityIsZero(resources.requests?.cpu)) {
    resources.requests = { ...(resources.requests ?? {}), cpu: limits.cpu };
  }
  // Upstream only writes a VMI CPU request when the cluster overrides the 100m default;
  // otherwise the launcher pod's request comes from cpuAllocationRatio.
  const cpuRequest = parseQuantity(config.cpuRequest);
  const isDefault = cpuRequest !== undefined && cpuRequest.num * 10n === cpuRequest.den;
  if (!isDefault && resources.requests?.cpu === undefined && !spec.domain.cpu?.dedicatedCpuPlacement) {
    resources.requests = { ...(resources.requests ?? {}), cpu: config.cpuRequest };
  }
}

function setGuestMemory(spec: VirtualMachineInstanceSpec): void {
  if (spec.domain.memory?.guest !== undefined) return;
  spec.domain.memory ??= {};
  const memory = spec.domain.memory;
  const res = spec.domain.resources ?? {};
  if (!quantityIsZero(res.requests?.memory)) memory.guest = res.requests?.memory;
  else if (!quantityIsZero(res.limits?.memory)) memory.guest = res.limits?.memory;
  else if (memory.hugepages?.pageSize && parseQuantity(memory.hugepages.pageSize)) {
    memory.guest = memory.hugepages.pageSize;
  }
}

/** Sockets from the CPU limit (else request), one core, one thread: upstream's `SetDefaultGuestCPUTopology`. */
function setGuestCPUTopology(spec: VirtualMachineInstanceSpec): void {
  const cpu = spec.domain.cpu;
  if (cpu && (cpu.cores || cpu.sockets || cpu.threads)) return;
  const res = spec.domain.resources ?? {};
  let sockets = 1;
  if (res.limits?.cpu !== undefined) sockets = quantityValue(res.limits.cpu);
  else if (res.requests?.cpu !== undefined) sockets = quantityValue(res.requests.cpu);
  spec.domain.cpu = { ...(cpu ?? {}), sockets, cores: 1, threads: 1 };
}

function setPullPolicies(spec: VirtualMachineInstanceSpec): void {
  for (const v of spec.volumes ?? []) {
    const cd = v.containerDisk;
    if (!cd || cd.imagePullPolicy) continue;
    const image = cd.image ?? '';
    cd.imagePullPolicy = image.endsWith(':latest') || !/[:@]/.test(image) ? 'Always' : 'IfNotPresent';
  }
}

/**
 * Upstream's `SetDefaultNetworkInterface`: a pod network and one interface when none are
 * given. The VM defaulting applies it to a VM's template too, as upstream's VM mutator.
 */
export function setDefaultNetworkInterface(spec: VirtualMachineInstanceSpec, config: ClusterConfig): void {
  const devices = spec.domain.devices;
  if (devices.autoattachPodInterface === false) return;
  if ((spec.networks?.length ?? 0) > 0 || (devices.interfaces?.length ?? 0) > 0) return;
  const path = 'spec.domain.devices.interfaces';
  let iface: Interface;
  switch (config.defaultNetworkInterface) {
    case 'bridge':
      if (!config.permitBridgeInterfaceOnPodNetwork) {
        throw new DefaultingError([fieldError(path, 'bridge interface is not enabled in kubevirt-config')]);
      }
      iface = { name: 'default', bridge: {} };
      break;
    case 'masquerade':
      iface = { name: 'default', masquerade: {} };
      break;
    case 'slirp':
      throw new DefaultingError([fieldError(path, 'slirp interface is deprecated as of v1.3')]);
    default:
      throw new DefaultingError([
        fieldError(
          path,
          `unknown default network interface '${config.defaultNetworkInterface}' in kubevirt-config (use bridge or masquerade)`,
        ),
      ]);
  }
  const network: Network = { name: 'default', pod: {} };
  devices.interfaces = [iface];
  spec.networks = [network];
}

/**
 * Upstream's `SetDefaultVolumeDisk`: a disk named after every volume that has no disk or
 * filesystem, except a memory dump volume (no disk shows one: upstream's validation
 * leaves it out of the disks' volumes, so its disk would be refused).
 */
export function setDefaultVolumeDisks(spec: VirtualMachineInstanceSpec): void {
  const devices = spec.domain.devices;
  const used = new Set<string>([
    ...(devices.disks ?? []).map((d) => d.name),
    ...(devices.filesystems ?? []).map((f) => f.name),
  ]);
  for (const v of spec.volumes ?? []) {
    if (!used.has(v.name) && !v.memoryDump) {
      devices.disks = [...(devices.disks ?? []), { name: v.name }];
      used.add(v.name);
    }
  }
}

/**
 * The spec-level defaults (upstream's `SetDefaultVirtualMachineInstanceSpec`), the part the
 * VM admitter also applies to a VM's template before validating it. Returns a new spec.
 * Throws {@link DefaultingError} when the configured default interface is not permitted.
 */
export function defaultVirtualMachineInstanceSpec(
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): VirtualMachineInstanceSpec {
  const s: VirtualMachineInstanceSpec = cloneJson(spec ?? ({} as VirtualMachineInstanceSpec));
  s.domain ??= { devices: {} };
  s.domain.devices ??= {};
  s.architecture ||= config.defaultArchitecture;
  s.domain.machine ??= {};
  s.domain.machine.type ||= config.machineType(s.architecture);
  setResourceRequests(s, config);
  setGuestMemory(s);
  setGuestCPUTopology(s);
  setPullPolicies(s);
  if (s.evictionStrategy === undefined && config.evictionStrategy !== undefined) {
    s.evictionStrategy = config.evictionStrategy;
  }
  setDefaultNetworkInterface(s, config);
  setDefaultVolumeDisks(s);
  return s;
}

/** CPU hotplug headroom when the rollout strategy is LiveUpdate (upstream's `setupCPUHotplug`). */
function setupCPUHotplug(spec: VirtualMachineInstanceSpec, config: ClusterConfig): void {
  const cpu = spec.domain.cpu;
  if (!cpu || cpu.maxSockets) return;
  // Unset sockets count as 0, as in upstream's Go struct: no headroom then.
  const sockets = cpu.sockets ?? 0;
  let maxSockets = config.maximumCpuSockets;
  if (maxSockets !== 0 && sockets > maxSockets) maxSockets = sockets;
  if (maxSockets === 0) {
    maxSockets = sockets * config.maxHotplugRatio;
    const perSocket = (cpu.cores ?? 1) * (cpu.threads ?? 1);
    if (maxSockets * perSocket > 512) maxSockets = Math.max(Math.floor(512 / perSocket), sockets);
  }
  if (maxSockets > 0) cpu.maxSockets = maxSockets;
}

/** Memory hotplug headroom when the rollout strategy is LiveUpdate (upstream's `setupMemoryHotplug`). */
function setupMemoryHotplug(spec: VirtualMachineInstanceSpec, config: ClusterConfig): void {
  const memory = spec.domain.memory;
  if (!memory || memory.maxGuest !== undefined) return;
  let maxGuest = config.maximumGuestMemory;
  if (maxGuest === undefined && memory.guest !== undefined) {
    maxGuest = formatQuantity(quantityValue(memory.guest) * config.maxHotplugRatio, 'BinarySI');
  }
  // Not eligible (too small, realtime, encrypted...): no hotplug, as upstream.
  if (liveUpdateMemoryProblem(spec, maxGuest) !== undefined) return;
  memory.maxGuest = maxGuest;
}

/**
 * Defaults a VirtualMachineInstance as upstream's admission does and returns the new
 * object: machine type, CPU model, topology, guest memory, default pod network and
 * interface, a disk per volume, disk bus by architecture, API field defaults, Hyper-V
 * dependencies, EFI secure boot, grace period, firmware UUID, memory and CPU status, and
 * the foreground-delete finalizer.
 */
export function defaultVirtualMachineInstance(
  vmi: VirtualMachineInstance,
  config: ClusterConfig,
  options: VMIDefaultingOptions = {},
): VirtualMachineInstance {
  const out: VirtualMachineInstance = cloneJson(vmi);
  const spec = defaultVirtualMachineInstanceSpec(out.spec, config);
  out.spec = spec;
  const arch = spec.architecture ?? config.defaultArchitecture;
  setObjectDefaults(spec, arch);
  setHypervFeatureDependencies(spec);
  setArchDefaults(spec, arch);
  spec.domain.cpu ??= {};
  const cpu = spec.domain.cpu;
  cpu.model ||= config.cpuModel || DefaultCPUModel;
  const efi = spec.domain.firmware?.bootloader?.efi;
  if (efi && efi.secureBoot === undefined) efi.secureBoot = true;
  spec.terminationGracePeriodSeconds ??= DefaultTerminationGracePeriodSeconds;
  spec.domain.firmware ??= {};
  const firmware = spec.domain.firmware;
  firmware.uuid ||= firmwareUUIDForName(out.metadata?.name ?? '');
  if (arch !== 'arm64' && config.vmRolloutStrategy === 'LiveUpdate') {
    setupCPUHotplug(spec, config);
    setupMemoryHotplug(spec, config);
  }

  out.status ??= {};
  const status = out.status;
  // Node selectors for hosts that can run the VMI, as upstream's VMI mutator adds them.
  const ls = spec.domain.launchSecurity;
  const selectors: string[] = [];
  if (spec.domain.cpu?.realtime) selectors.push(Labels.realtime);
  if (ls?.sev || ls?.snp) selectors.push(Labels.sev);
  if (ls?.sev?.policy?.encryptedState) selectors.push(Labels.sevES);
  if (ls?.snp) selectors.push(Labels.sevSNP);
  if (selectors.length > 0) {
    spec.nodeSelector = {
      ...(spec.nodeSelector ?? {}),
      ...Object.fromEntries(selectors.map((l) => [l, ''])),
    };
  }
  status.phase ||= 'Pending';
  if (options.now && !status.phaseTransitionTimestamps?.length) {
    status.phaseTransitionTimestamps = [
      { phase: 'Pending', phaseTransitionTimestamp: options.now.toISOString() },
    ];
  }
  if (!config.isFeatureGateEnabled(FeatureGate.Root)) status.runtimeUser ??= NonRootUID;
  const guest = spec.domain.memory?.guest;
  if (guest !== undefined) {
    status.memory = {
      ...(status.memory ?? {}),
      guestAtBoot: guest,
      guestCurrent: guest,
      guestRequested: guest,
    };
  }
  status.currentCPUTopology ??= { sockets: cpu.sockets, cores: cpu.cores, threads: cpu.threads };

  out.metadata ??= {};

  const meta = out.metadata;
  const finalizers = meta.finalizers ?? [];
  if (!finalizers.includes(Finalizers.virtualMachineInstance)) {
    meta.finalizers = [...finalizers, Finalizers.virtualMachineInstance];
  }
  return out;
}
