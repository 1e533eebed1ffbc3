/**
 * CPU, memory and machine rules of a VMI spec (upstream's VMI create admitter): memory in
 * ./vmi-memory, CPUs in ./vmi-cpu; here the machine type allow-list and the architecture.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec } from '../generated/types';
import { validateCPU } from './vmi-cpu';
import { validateMemory } from './vmi-memory';

export { MAX_VCPUS } from './vmi-cpu';
export { validateMandatoryMemory } from './vmi-memory';

const knownArchitectures = new Set(['amd64', 'arm64', 's390x', 'ppc64le']);

/**
 * Go's `filepath.Match` for the `emulatedMachines` patterns (`q35*`, `pc-q35*`): `*` and
 * `?` never cross `/`, `[...]` is a class. The whole name must match.
 */
export function machinePatternMatches(pattern: string, machine: string): boolean {
  let re = compiledPatterns.get(pattern);
  if (re === undefined) {
    // The configured patterns are few and checked on every admission: compile each once.
    if (compiledPatterns.size >= 256) compiledPatterns.clear();
    re = compilePattern(pattern);
    compiledPatterns.set(pattern, re);
  }
  return re?.test(machine) ?? false;
}

const compiledPatterns = new Map<string, RegExp | null>();

/** The pattern as a regular expression; null for a malformed one (Go's ErrBadPattern: no match). */
function compilePattern(pattern: string): RegExp | null {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) return null;
      // Go negates a class with `^`, as regular expressions do.
      re += `[${pattern.slice(i + 1, end).replace(/\\/g, '\\\\')}]`;
      i = end;
    } else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  try {
    return new RegExp(`${re}$`);
  } catch {
    return null;
  }
}

function validateMachine(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  const type = spec.domain.machine?.type;
  if (type) {
    const allowed = config.emulatedMachines(spec.architecture);
    if (!allowed.some((p) => machinePatternMatches(p, type))) {
      const path = field.child('domain', 'machine', 'type');
      errs.push(
        fieldError(path, `${path} is not supported: ${type} (allowed values: [${allowed.join(' ')}])`),
      );
    }
  }
  const arch = spec.architecture;
  if (arch) {
    if (!knownArchitectures.has(arch)) {
      errs.push(fieldError(field.child('architecture'), `unsupported architecture: ${arch}`));
    } else if (
      arch !== config.defaultArchitecture &&
      !config.isFeatureGateEnabled(FeatureGate.MultiArchitecture)
    ) {
      errs.push(
        fieldError(
          field.child('architecture'),
          `${FeatureGate.MultiArchitecture} feature gate is not enabled in kubevirt-config, invalid entry ${field.child('architecture')}`,
          'FieldValueRequired',
        ),
      );
    }
  }
  return errs;
}

/** CPU, memory, machine type and architecture rules. */
export function validateCompute(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  return [
    ...validateMemory(field, spec, config),
    ...validateMachine(field, spec, config),
    ...validateCPU(field, spec, config),
  ];
}
