/**
 * A preference's minimum resources (upstream pkg/instancetype/requirements): the vCPUs
 * and memory the instance type, or else the VM itself, must provide. Checked after
 * expansion and defaulting, as upstream's VM admitter does.
 */
import { quantityValue } from '../config/quantity';
import { type FieldError, fieldError } from '../errors';
import type {
  VirtualMachineInstanceSpec,
  VirtualMachineInstancetypeSpec,
  VirtualMachinePreferenceSpec,
} from '../generated/types';
import { preferredTopology, spreadOptions } from './apply-instancetype';

function failure(paths: string[], reason: string): FieldError[] {
  return [
    fieldError(paths.join(', '), `failure checking preference requirements: ${reason}`, 'FieldValueNotFound'),
  ];
}

function checkCPU(
  it: VirtualMachineInstancetypeSpec | undefined,
  pref: VirtualMachinePreferenceSpec,
  spec: VirtualMachineInstanceSpec,
): FieldError[] {
  const required = pref.requirements?.cpu?.guest;
  if (required === undefined) return [];
  if (it) {
    const guest = it.cpu?.guest ?? 0;
    return guest < required
      ? failure(
          ['spec.instancetype'],
          `insufficient CPU resources of ${guest} vCPU provided by instance type, preference requires ${required} vCPU`,
        )
      : [];
  }
  const cpu = spec.domain.cpu;
  const base = 'spec.template.spec.domain.cpu';
  if (!cpu)
    return failure(
      [base],
      `no CPU resources provided by VirtualMachine, preference requires ${required} vCPU`,
    );
  const sockets = cpu.sockets ?? 0;
  const cores = cpu.cores ?? 0;
  const threads = cpu.threads ?? 0;
  const vm = (n: number, as: string) =>
    `insufficient CPU resources of ${n} vCPU provided by VirtualMachine, preference requires ${required} vCPU provided as ${as}`;
  switch (preferredTopology(pref)) {
    case 'threads':
    case 'preferThreads':
      return threads < required ? failure([`${base}.threads`], vm(threads, 'threads')) : [];
    case 'cores':
    case 'preferCores':
      return cores < required ? failure([`${base}.cores`], vm(cores, 'cores')) : [];
    case 'spread':
    case 'preferSpread': {
      const { across } = spreadOptions(pref);
      const [n, fields] =
        across === 'CoresThreads'
          ? [cores * threads, ['cores', 'threads']]
          : across === 'SocketsCoresThreads'
            ? [sockets * cores * threads, ['sockets', 'cores', 'threads']]
            : [sockets * cores, ['sockets', 'cores']];
      return n < required
        ? failure(
            fields.map((f) => `${base}.${f}`),
            vm(n, across),
          )
        : [];
    }
    case 'any':
    case 'preferAny': {
      const n = cores * sockets * threads;
      return n < required
        ? failure(
            [`${base}.cores`, `${base}.sockets`, `${base}.threads`],
            vm(n, 'cores, sockets and threads'),
          )
        : [];
    }
    default:
      return sockets < required ? failure([`${base}.sockets`], vm(sockets, 'sockets')) : [];
  }
}

function checkMemory(
  it: VirtualMachineInstancetypeSpec | undefined,
  pref: VirtualMachinePreferenceSpec,
  spec: VirtualMachineInstanceSpec,
): FieldError[] {
  const required = pref.requirements?.memory?.guest;
  if (required === undefined) return [];
  if (it) {
    return quantityValue(it.memory?.guest) < quantityValue(required)
      ? failure(
          ['spec.instancetype'],
          `insufficient Memory resources of ${it.memory?.guest} provided by instance type, preference requires ${required}`,
        )
      : [];
  }
  const guest = spec.domain.memory?.guest;
  return quantityValue(guest) < quantityValue(required)
    ? failure(
        ['spec.template.spec.domain.memory'],
        `insufficient Memory resources of ${guest ?? '0'} provided by VirtualMachine, preference requires ${required}`,
      )
    : [];
}

/** Upstream's `CheckPreferenceRequirements` on a defaulted template spec. */
export function checkPreferenceRequirements(
  it: VirtualMachineInstancetypeSpec | undefined,
  pref: VirtualMachinePreferenceSpec | undefined,
  spec: VirtualMachineInstanceSpec,
): FieldError[] {
  if (!pref?.requirements) return [];
  const cpu = checkCPU(it, pref, spec);
  return cpu.length > 0 ? cpu : checkMemory(it, pref, spec);
}
