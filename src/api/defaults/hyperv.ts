/**
 * Hyper-V enlightenment dependencies (upstream pkg/defaults/hyperv.go): some features
 * need another one on (synic needs vpindex, evmcs needs vapic...). Defaulting turns a
 * missing requirement on; validation rejects a requirement the user turned off.
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { CPUFeature, FeatureHyperv, FeatureState, VirtualMachineInstanceSpec } from '../generated/types';

type HypervKey = 'vpindex' | 'synic' | 'vapic' | 'evmcs' | 'ipi' | 'tlbflush' | 'synictimer';

interface Dependency {
  feature: HypervKey;
  requires: HypervKey;
}

// Leaves first, like upstream, so a chain (synictimer -> synic -> vpindex) resolves in one pass.
const dependencies: Dependency[] = [
  { feature: 'evmcs', requires: 'vapic' },
  { feature: 'ipi', requires: 'vpindex' },
  { feature: 'tlbflush', requires: 'vpindex' },
  { feature: 'synictimer', requires: 'synic' },
  { feature: 'synic', requires: 'vpindex' },
];

function state(hyperv: FeatureHyperv, key: HypervKey): FeatureState | undefined {
  return (hyperv as Record<string, FeatureState | undefined>)[key];
}

function isEnabled(fs: FeatureState | undefined): boolean {
  return fs?.enabled === true;
}

function isMissing(fs: FeatureState | undefined): boolean {
  return fs === undefined || fs.enabled === undefined;
}

/**
 * Enables the Hyper-V features that enabled features require and the user left unset, and
 * adds the `vmx` CPU feature when evmcs is on. Mutates `spec` (callers pass a copy).
 * Like upstream, a requirement the user disabled is left for validation to report.
 */
export function setHypervFeatureDependencies(spec: VirtualMachineInstanceSpec): void {
  const hyperv = spec.domain?.features?.hyperv;
  if (!hyperv) return;
  const h = hyperv as Record<string, FeatureState | undefined>;
  for (const dep of dependencies) {
    if (!isEnabled(state(hyperv, dep.feature))) continue;
    const req = state(hyperv, dep.requires);
    if (isMissing(req)) h[dep.requires] = { ...(req ?? {}), enabled: true };
    else if (!isEnabled(req)) break;
  }
  const evmcs = hyperv.evmcs;
  if (evmcs && evmcs.enabled !== false) {
    spec.domain.cpu ??= {};
    const cpu = spec.domain.cpu;
    cpu.features ??= [];
    const features: CPUFeature[] = cpu.features;
    const vmx = features.find((f) => f.name === 'vmx');
    if (vmx) vmx.policy = 'require';
    else features.push({ name: 'vmx', policy: 'require' });
  }
}

/** Reports enabled Hyper-V features whose requirement is disabled (upstream's wording). */
export function validateHypervFeatureDependencies(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
): FieldError[] {
  const hyperv = spec.domain?.features?.hyperv;
  if (!hyperv) return [];
  const base = field.child('domain', 'features', 'hyperv');
  const errors: FieldError[] = [];
  for (const dep of dependencies) {
    if (isEnabled(state(hyperv, dep.feature)) && !isEnabled(state(hyperv, dep.requires))) {
      const f = base.child(dep.feature);
      errors.push(fieldError(f, `'${f}' requires '${base.child(dep.requires)}', which was disabled.`));
    }
  }
  return errors;
}

/** Upstream's `ValidateVirtualMachineInstanceHypervMode`: explicit Hyper-V features exclude passthrough. */
export function validateHypervMode(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const f = spec.domain?.features;
  if (f?.hyperv && f.hypervPassthrough) {
    return [
      fieldError(
        field.child('domain', 'features', 'hyperv'),
        'Cannot explicitly set hyperV features if HypervPassthrough is being used. Please use either HyperV or HypervPassthrough.',
      ),
    ];
  }
  return [];
}
