/**
 * Applying an instance type to a VMI spec (upstream pkg/instancetype/apply): the instance
 * type's CPU, memory, scheduling and device values are copied in, and any of those the VM
 * already sets is a conflict (upstream rejects the VM rather than choosing a winner).
 */
import { quantityValue } from '../config/quantity';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type {
  ObjectMeta,
  VirtualMachineInstanceSpec,
  VirtualMachineInstancetypeSpec,
  VirtualMachinePreferenceSpec,
} from '../generated/types';

/** Upstream's `VMFieldConflictErrorFmt`. */
export function conflictMessage(path: string): string {
  return `VM field ${path} conflicts with selected instance type`;
}

function conflict(path: FieldPath): FieldError {
  return fieldError(path, conflictMessage(String(path)));
}

/** The topology a preference asks for; `sockets` when it names none (upstream's default). */
export function preferredTopology(preference: VirtualMachinePreferenceSpec | undefined): string {
  return preference?.cpu?.preferredCPUTopology ?? 'sockets';
}

/** Spread ratio and axis of a preference: ratio 2 across sockets and cores unless set. */
export function spreadOptions(preference: VirtualMachinePreferenceSpec | undefined): {
  ratio: number;
  across: string;
} {
  const opts = preference?.cpu?.spreadOptions;
  return {
    ratio: opts?.ratio ?? preference?.preferSpreadSocketToCoreRatio ?? 2,
    across: opts?.across ?? 'SocketsCores',
  };
}

function applyGuestCPUTopology(
  vcpus: number,
  preference: VirtualMachinePreferenceSpec | undefined,
  spec: VirtualMachineInstanceSpec,
): void {
  spec.domain.cpu ??= {};
  const cpu = spec.domain.cpu;
  cpu.cores = 1;
  cpu.sockets = 1;
  cpu.threads = 1;
  if (vcpus === 1) return;
  switch (preferredTopology(preference)) {
    case 'cores':
    case 'preferCores':
      cpu.cores = vcpus;
      break;
    case 'threads':
    case 'preferThreads':
      cpu.threads = vcpus;
      break;
    case 'spread':
    case 'preferSpread': {
      const { ratio, across } = spreadOptions(preference);
      if (across === 'CoresThreads') {
        cpu.threads = ratio;
        cpu.cores = Math.floor(vcpus / ratio);
      } else if (across === 'SocketsCoresThreads') {
        cpu.threads = 2;
        cpu.cores = ratio;
        cpu.sockets = Math.floor(vcpus / 2 / ratio);
      } else {
        cpu.cores = ratio;
        cpu.sockets = Math.floor(vcpus / ratio);
      }
      break;
    }
    default:
      cpu.sockets = vcpus;
  }
}

function applyCPU(
  base: FieldPath,
  it: VirtualMachineInstancetypeSpec,
  preference: VirtualMachinePreferenceSpec | undefined,
  spec: VirtualMachineInstanceSpec,
): FieldError[] {
  spec.domain.cpu ??= {};
  const cpu = spec.domain.cpu;
  const res = spec.domain.resources ?? {};
  const itCPU = it.cpu ?? { guest: 1 };
  const conflicts: FieldError[] = [];
  if (res.requests?.cpu !== undefined)
    conflicts.push(conflict(base.child('domain', 'resources', 'requests', 'cpu')));
  if (res.limits?.cpu !== undefined)
    conflicts.push(conflict(base.child('domain', 'resources', 'limits', 'cpu')));
  if (cpu.sockets) conflicts.push(conflict(base.child('domain', 'cpu', 'sockets')));
  if (cpu.cores) conflicts.push(conflict(base.child('domain', 'cpu', 'cores')));
  if (cpu.threads) conflicts.push(conflict(base.child('domain', 'cpu', 'threads')));
  if (cpu.model && itCPU.model !== undefined) conflicts.push(conflict(base.child('domain', 'cpu', 'model')));
  if (cpu.dedicatedCpuPlacement && itCPU.dedicatedCPUPlacement !== undefined) {
    conflicts.push(conflict(base.child('domain', 'cpu', 'dedicatedCPUPlacement')));
  }
  if (cpu.isolateEmulatorThread && itCPU.isolateEmulatorThread !== undefined) {
    conflicts.push(conflict(base.child('domain', 'cpu', 'isolateEmulatorThread')));
  }
  if (cpu.numa && itCPU.numa) conflicts.push(conflict(base.child('domain', 'cpu', 'numa')));
  if (cpu.realtime && itCPU.realtime) conflicts.push(conflict(base.child('domain', 'cpu', 'realtime')));
  if (conflicts.length > 0) return conflicts;

  if (!cpu.model && itCPU.model !== undefined) cpu.model = itCPU.model;
  if (itCPU.dedicatedCPUPlacement !== undefined) cpu.dedicatedCpuPlacement = itCPU.dedicatedCPUPlacement;
  if (itCPU.isolateEmulatorThread !== undefined) cpu.isolateEmulatorThread = itCPU.isolateEmulatorThread;
  if (!cpu.numa && itCPU.numa) cpu.numa = structuredClone(itCPU.numa);
  if (!cpu.realtime && itCPU.realtime) cpu.realtime = structuredClone(itCPU.realtime);
  if (itCPU.maxSockets !== undefined) cpu.maxSockets = itCPU.maxSockets;
  applyGuestCPUTopology(itCPU.guest ?? 1, preference, spec);
  return [];
}

function applyMemory(
  base: FieldPath,
  it: VirtualMachineInstancetypeSpec,
  spec: VirtualMachineInstanceSpec,
): FieldError[] {
  const domain = spec.domain;
  if (domain.memory) return [conflict(base.child('domain', 'memory'))];
  if (domain.resources?.requests?.memory !== undefined) {
    return [conflict(base.child('domain', 'resources', 'requests', 'memory'))];
  }
  if (domain.resources?.limits?.memory !== undefined) {
    return [conflict(base.child('domain', 'resources', 'limits', 'memory'))];
  }
  const mem = it.memory;
  domain.memory = { guest: mem?.guest };
  const overcommit = mem?.overcommitPercent ?? 0;
  if (overcommit > 0) {
    const bytes = Math.trunc(quantityValue(mem?.guest) * (1 - overcommit / 100));
    domain.resources = { ...(domain.resources ?? {}) };
    domain.resources.requests = { ...(domain.resources.requests ?? {}), memory: String(bytes) };
  }
  if (mem?.hugepages) domain.memory.hugepages = structuredClone(mem.hugepages);
  if (mem?.maxGuest !== undefined) domain.memory.maxGuest = mem.maxGuest;
  return [];
}

/**
 * Applies an instance type to a VMI spec and template metadata, in place (callers pass
 * copies). Returns the conflicts; when there are any, nothing after the conflicting part
 * is applied, as upstream.
 */
export function applyInstancetype(
  base: FieldPath,
  it: VirtualMachineInstancetypeSpec,
  preference: VirtualMachinePreferenceSpec | undefined,
  spec: VirtualMachineInstanceSpec,
  metadata: ObjectMeta,
): FieldError[] {
  const conflicts: FieldError[] = [];
  if (it.nodeSelector) {
    if (spec.nodeSelector) conflicts.push(conflict(base.child('nodeSelector')));
    else spec.nodeSelector = { ...it.nodeSelector };
  }
  if (it.schedulerName) {
    if (spec.schedulerName) conflicts.push(conflict(base.child('schedulerName')));
    else spec.schedulerName = it.schedulerName;
  }
  conflicts.push(...applyCPU(base, it, preference, spec));
  conflicts.push(...applyMemory(base, it, spec));
  if (it.ioThreadsPolicy) {
    if (spec.domain.ioThreadsPolicy) conflicts.push(conflict(base.child('domain', 'ioThreadsPolicy')));
    else spec.domain.ioThreadsPolicy = it.ioThreadsPolicy;
  }
  if (it.launchSecurity) {
    if (spec.domain.launchSecurity) conflicts.push(conflict(base.child('domain', 'launchSecurity')));
    else spec.domain.launchSecurity = structuredClone(it.launchSecurity);
  }
  if (it.gpus?.length) {
    if (spec.domain.devices.gpus?.length) conflicts.push(conflict(base.child('domain', 'devices', 'gpus')));
    else spec.domain.devices.gpus = structuredClone(it.gpus);
  }
  if (it.hostDevices?.length) {
    if (spec.domain.devices.hostDevices?.length) {
      conflicts.push(conflict(base.child('domain', 'devices', 'hostDevices')));
    } else spec.domain.devices.hostDevices = structuredClone(it.hostDevices);
  }
  for (const [k, v] of Object.entries(it.annotations ?? {})) {
    const existing = metadata.annotations?.[k];
    if (existing !== undefined && existing !== v) {
      conflicts.push(fieldError(`annotations.${k}`, conflictMessage(`annotations.${k}`)));
    } else metadata.annotations = { ...(metadata.annotations ?? {}), [k]: v };
  }
  return conflicts;
}
