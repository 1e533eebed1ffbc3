/**
 * CPU rules of a VMI spec (upstream's VMI create admitter): CPU requests and limits,
 * dedicated CPU placement, NUMA, realtime, CPU features, and the vCPU bound of topology
 * and hotplug.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { quantityIsZero, quantityMilliValue, quantityValue } from '../config/quantity';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec } from '../generated/types';
import { quantityText } from './vmi-memory';

const validCPUFeaturePolicies = new Set(['', 'force', 'require', 'optional', 'disable', 'forbid']);
/** The most vCPUs a VMI may have or hotplug up to (upstream's bound on the defaulted maxSockets). */
export const MAX_VCPUS = 512;

function vcpus(spec: VirtualMachineInstanceSpec): number {
  const cpu = spec.domain.cpu;
  if (!cpu) return 0;
  const cores = cpu.cores || 1;
  const sockets = cpu.sockets || 1;
  const threads = cpu.threads || 1;
  return cpu.cores || cpu.sockets || cpu.threads ? cores * sockets * threads : 0;
}

function validateCPUResources(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const errs: FieldError[] = [];
  const res = spec.domain.resources ?? {};
  const reqPath = field.child('domain', 'resources', 'requests', 'cpu');
  const limPath = field.child('domain', 'resources', 'limits', 'cpu');
  if (quantityMilliValue(res.requests?.cpu) < 0) {
    errs.push(
      fieldError(
        reqPath,
        `${reqPath} '${quantityText(res.requests?.cpu)}': must be greater than or equal to 0.`,
      ),
    );
  }
  if (quantityMilliValue(res.limits?.cpu) < 0) {
    errs.push(
      fieldError(
        limPath,
        `${limPath} '${quantityText(res.limits?.cpu)}': must be greater than or equal to 0.`,
      ),
    );
  }
  if (
    quantityMilliValue(res.limits?.cpu) > 0 &&
    quantityMilliValue(res.requests?.cpu) > quantityMilliValue(res.limits?.cpu)
  ) {
    errs.push(
      fieldError(
        reqPath,
        `${reqPath} '${quantityText(res.requests?.cpu)}' is greater than ${limPath} '${quantityText(res.limits?.cpu)}'`,
      ),
    );
  }
  return errs;
}

function validateCPUPinning(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const cpu = spec.domain.cpu;
  if (!cpu?.dedicatedCpuPlacement) return [];
  const errs: FieldError[] = [];
  const res = spec.domain.resources ?? {};
  const reqCPU = quantityValue(res.requests?.cpu);
  const limCPU = quantityValue(res.limits?.cpu);
  const reqCPUPath = field.child('domain', 'resources', 'requests', 'cpu');
  const limCPUPath = field.child('domain', 'resources', 'limits', 'cpu');
  const reqMemPath = field.child('domain', 'resources', 'requests', 'memory');
  const limMemPath = field.child('domain', 'resources', 'limits', 'memory');
  const coresPath = field.child('domain', 'cpu', 'cores');
  const placement = field.child('domain', 'cpu', 'dedicatedCpuPlacement');
  if (
    quantityIsZero(res.limits?.memory) &&
    quantityIsZero(res.requests?.memory) &&
    !spec.domain.memory?.hugepages &&
    quantityIsZero(spec.domain.memory?.guest)
  ) {
    errs.push(
      fieldError(
        limMemPath,
        `${reqMemPath}, ${limMemPath}, ${field.child('domain', 'memory', 'hugepages')} or ${field.child('domain', 'memory', 'guest')} should be provided`,
      ),
    );
  }
  if (reqCPU > 0 && reqCPU * 1000 !== quantityMilliValue(res.requests?.cpu)) {
    errs.push(fieldError(reqCPUPath, 'provided resources CPU requests must be an interger'));
  }
  if (limCPU > 0 && limCPU * 1000 !== quantityMilliValue(res.limits?.cpu)) {
    errs.push(fieldError(limCPUPath, 'provided resources CPU limits must be an interger'));
  }
  const reqMem = quantityValue(res.requests?.memory);
  const limMem = quantityValue(res.limits?.memory);
  if (reqMem > 0 && limMem > 0 && reqMem !== limMem) {
    errs.push(fieldError(reqMemPath, `${reqMemPath} must be equal to ${limMemPath}`));
  }
  const n = vcpus(spec);
  if (reqCPU === 0 && limCPU === 0 && n === 0) {
    errs.push(
      fieldError(
        placement,
        `either ${reqCPUPath} or ${limCPUPath} or ${coresPath} must be provided when DedicatedCPUPlacement is true `,
      ),
    );
  }
  if (reqCPU > 0 && limCPU > 0 && reqCPU !== limCPU) {
    errs.push(
      fieldError(
        placement,
        `${reqCPUPath} or ${limCPUPath} must be equal when DedicatedCPUPlacement is true `,
      ),
    );
  }
  if ((reqCPU > 0 || limCPU > 0) && n > 0 && reqCPU !== n && limCPU !== n) {
    errs.push(
      fieldError(
        placement,
        `${reqCPUPath} or ${limCPUPath} must not be provided at the same time with ${coresPath} when DedicatedCPUPlacement is true `,
      ),
    );
  }
  const arch = spec.architecture || config.defaultArchitecture;
  const threadsPath = field.child('domain', 'cpu', 'threads');
  if ((cpu.threads ?? 0) > 1 && arch === 'arm64') {
    errs.push(
      fieldError(
        field.child('architecture'),
        `threads must not be greater than 1 at ${threadsPath} (got ${cpu.threads}) when ${field.child('architecture')} is arm64`,
      ),
    );
  }
  if ((cpu.threads ?? 0) > 2) {
    errs.push(
      fieldError(
        placement,
        `Not more than two threads must be provided at ${threadsPath} (got ${cpu.threads}) when DedicatedCPUPlacement is true`,
      ),
    );
  }
  return errs;
}

function validateCPUOptions(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  const cpu = spec.domain.cpu;
  if (!cpu) return errs;
  const numaPath = field.child('domain', 'cpu', 'numa', 'guestMappingPassthrough');
  const placement = field.child('domain', 'cpu', 'dedicatedCpuPlacement');
  if (cpu.numa?.guestMappingPassthrough) {
    if (!config.isFeatureGateEnabled(FeatureGate.NUMA)) {
      errs.push(
        fieldError(
          numaPath,
          `NUMA feature gate is not enabled in kubevirt-config, invalid entry ${numaPath}`,
        ),
      );
    }
    if (!cpu.dedicatedCpuPlacement) {
      errs.push(
        fieldError(
          numaPath,
          `${placement} must be set to true when NUMA topology strategy is set in ${numaPath}`,
        ),
      );
    }
    if (!spec.domain.memory?.hugepages) {
      errs.push(
        fieldError(
          numaPath,
          `${field.child('domain', 'memory', 'hugepages')} must be requested when NUMA topology strategy is set in ${numaPath}`,
        ),
      );
    }
  }
  if (cpu.isolateEmulatorThread && !cpu.dedicatedCpuPlacement) {
    errs.push(
      fieldError(
        field.child('domain', 'cpu', 'isolateEmulatorThread'),
        'IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement',
      ),
    );
  }
  (cpu.features ?? []).forEach((f, idx) => {
    if (!validCPUFeaturePolicies.has(f.policy ?? '')) {
      errs.push(
        fieldError(
          field.child('domain', 'cpu', 'features').index(idx).child('policy'),
          `CPU feature ${f.name} uses policy ${f.policy} that is not supported.`,
          'FieldValueNotSupported',
        ),
      );
    }
  });
  if (cpu.maxSockets && (cpu.sockets ?? 0) > cpu.maxSockets) {
    errs.push(
      fieldError(
        field.child('domain', 'cpu', 'sockets'),
        'Number of sockets in CPU topology is greater than the maximum sockets allowed',
      ),
    );
  }
  // Upstream caps the defaulted maxSockets so that the possible vCPUs stay within 512
  // (what libvirt and QEMU accept); a maxSockets or topology written out must keep to it too,
  // or the domain gets one <vcpu> entry per possible vCPU, unbounded.
  const perSocket = (cpu.cores || 1) * (cpu.threads || 1);
  if (perSocket * (cpu.sockets || 1) > MAX_VCPUS) {
    errs.push(
      fieldError(
        field.child('domain', 'cpu'),
        `sockets * cores * threads (${perSocket * (cpu.sockets || 1)}) exceeds the maximum of ${MAX_VCPUS} vCPUs`,
      ),
    );
  } else if (cpu.maxSockets && perSocket * cpu.maxSockets > MAX_VCPUS) {
    errs.push(
      fieldError(
        field.child('domain', 'cpu', 'maxSockets'),
        `maxSockets * cores * threads (${perSocket * cpu.maxSockets}) exceeds the maximum of ${MAX_VCPUS} vCPUs`,
      ),
    );
  }
  if (cpu.realtime) {
    const rt = field.child('domain', 'cpu', 'realtime');
    if (!cpu.dedicatedCpuPlacement) {
      errs.push(
        fieldError(placement, `${placement} must be set to true when ${rt} is used`, 'FieldValueRequired'),
      );
    }
    if (!cpu.numa?.guestMappingPassthrough) {
      errs.push(fieldError(numaPath, `${numaPath} must be defined when ${rt} is used`, 'FieldValueRequired'));
    }
  }
  return errs;
}

/** CPU requests and limits, dedicated placement, and CPU options (NUMA, realtime, features, topology). */
export function validateCPU(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  return [
    ...validateCPUResources(field, spec),
    ...validateCPUPinning(field, spec, config),
    ...validateCPUOptions(field, spec, config),
  ];
}
