/**
 * Instance type and preference expansion of a VirtualMachine (upstream's expand-spec):
 * the referenced objects are resolved, applied to the VM's template, and the matchers are
 * dropped, leaving a self-contained VM. Conflicts and missing objects are field errors.
 */
import { type FieldError, FieldPath, fieldError } from '../errors';
import type {
  VirtualMachine,
  VirtualMachineInstancetypeSpec,
  VirtualMachinePreferenceSpec,
} from '../generated/types';
import { applyInstancetype, preferredTopology, spreadOptions } from './apply-instancetype';
import { applyPreference } from './apply-preference';
import { type InstancetypeCatalog, instancetypeMatcherKind, preferenceMatcherKind } from './catalog';

/** Result of {@link expandVirtualMachine}: the expanded VM (unchanged on error) and the errors. */
export interface ExpansionResult {
  vm: VirtualMachine;
  errors: FieldError[];
  /** The resolved instance type and preference specs, when found. */
  instancetype?: VirtualMachineInstancetypeSpec;
  preference?: VirtualMachinePreferenceSpec;
}

function notFound(what: 'instancetype' | 'preference', kind: string, name: string): string {
  return `Failure to find ${what}: ${kind.toLowerCase()}s.instancetype.kubevirt.io "${name}" not found`;
}

/** Upstream's `checkSpreadCPUTopology`: the instance type's vCPUs must divide by the spread ratio. */
function checkSpread(
  it: VirtualMachineInstancetypeSpec | undefined,
  p: VirtualMachinePreferenceSpec | undefined,
): FieldError[] {
  const topology = preferredTopology(p);
  if (!it || (topology !== 'spread' && topology !== 'preferSpread')) return [];
  const { ratio, across } = spreadOptions(p);
  const guest = it.cpu?.guest ?? 1;
  const path = 'instancetype.spec.cpu.guest';
  const by = 'Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio';
  if (across === 'SocketsCoresThreads') {
    if (guest % 2 > 0 || (guest / 2) % ratio > 0) {
      return [
        fieldError(
          path,
          `${guest} vCPUs provided by the instance type are not divisible by the number of threads per core 2 and ${by} of ${ratio}`,
        ),
      ];
    }
  } else if (guest % ratio > 0) {
    const message =
      across === 'CoresThreads'
        ? `${guest} vCPUs provided by the instance type are not divisible by the number of threads per core ${ratio}`
        : `${guest} vCPUs provided by the instance type are not divisible by the ${by} of ${ratio} provided by the preference`;
    return [fieldError(path, message)];
  }
  return [];
}

/**
 * Expands a VM's instance type and preference into its template. A VM that references
 * neither is returned unchanged. Pure: returns a new VM.
 */
export function expandVirtualMachine(vm: VirtualMachine, catalog: InstancetypeCatalog): ExpansionResult {
  const itMatcher = vm.spec?.instancetype;
  const pMatcher = vm.spec?.preference;
  if (!itMatcher && !pMatcher) return { vm, errors: [] };
  const namespace = vm.metadata?.namespace ?? 'default';
  const errors: FieldError[] = [];

  let it: VirtualMachineInstancetypeSpec | undefined;
  if (itMatcher) {
    const kind = instancetypeMatcherKind(itMatcher);
    if (!kind) {
      errors.push(
        fieldError(
          'spec.instancetype',
          `Failure to find instancetype: got unexpected kind in InstancetypeMatcher: ${itMatcher.kind}`,
          'FieldValueNotFound',
        ),
      );
    } else {
      it = catalog.findInstancetype(itMatcher, namespace);
      if (!it) {
        errors.push(
          fieldError(
            'spec.instancetype',
            notFound('instancetype', kind, itMatcher.name ?? ''),
            'FieldValueNotFound',
          ),
        );
      }
    }
  }
  let pref: VirtualMachinePreferenceSpec | undefined;
  if (pMatcher) {
    const kind = preferenceMatcherKind(pMatcher);
    if (!kind) {
      errors.push(
        fieldError(
          'spec.preference',
          `Failure to find preference: got unexpected kind in PreferenceMatcher: ${pMatcher.kind}`,
          'FieldValueNotFound',
        ),
      );
    } else {
      pref = catalog.findPreference(pMatcher, namespace);
      if (!pref) {
        errors.push(
          fieldError(
            'spec.preference',
            notFound('preference', kind, pMatcher.name ?? ''),
            'FieldValueNotFound',
          ),
        );
      }
    }
  }
  if (errors.length > 0) return { vm, errors };
  const spread = checkSpread(it, pref);
  if (spread.length > 0) return { vm, errors: spread };

  const out: VirtualMachine = structuredClone(vm);
  out.spec.template ??= {};
  const template = out.spec.template;
  template.spec ??= { domain: { devices: {} } };
  const spec = template.spec;
  spec.domain ??= { devices: {} };
  spec.domain.devices ??= {};
  template.metadata ??= {};
  const metadata = template.metadata;
  if (it) {
    const conflicts = applyInstancetype(FieldPath.of('spec', 'template', 'spec'), it, pref, spec, metadata);
    if (conflicts.length > 0) return { vm, errors: conflicts };
  }
  if (pref) applyPreference(pref, spec, metadata);
  delete out.spec.instancetype;
  delete out.spec.preference;
  return { vm: out, errors: [], instancetype: it, preference: pref };
}
