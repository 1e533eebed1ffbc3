/**
 * Admission of clone.kubevirt.io's VirtualMachineClone, as upstream's vmclone-admitter.go
 * (its messages and field paths): the Snapshot feature gate on create, the filters' `!` and
 * `*` placement, source and target kinds, the source's group/kind/name, a target name that
 * is not the source VM's, well-formed new MAC addresses and patches. Also the defaulting of
 * upstream's clone-create-mutator: a target left out becomes a VirtualMachine named
 * `clone-<source>-<5 random characters>`.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import type { FieldError } from '../errors';

type Ref = { apiGroup?: unknown; kind?: unknown; name?: unknown };
type CloneLike = {
  spec?: {
    source?: Ref;
    target?: Ref;
    labelFilters?: unknown;
    annotationFilters?: unknown;
    template?: { labelFilters?: unknown; annotationFilters?: unknown };
    newMacAddresses?: unknown;
    patches?: unknown;
    volumeNamePolicy?: unknown;
  };
};

const invalid = (path: string, message: string): FieldError => ({ path, message, type: 'FieldValueInvalid' });
const MAC = /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/;
const VOLUME_NAME_POLICIES = ['RandomizeNames', 'PrefixTargetName'];

/** upstream validateFilters: `!` only first, `*` only last, a lone `!` is no filter. */
function filterErrors(filters: unknown, field: string): FieldError[] {
  if (filters === undefined || filters === null) return [];
  if (!Array.isArray(filters) || filters.some((f) => typeof f !== 'string'))
    return [invalid(field, 'filters must be a list of strings')];
  const errs: FieldError[] = [];
  const pattern = (f: string, what: string, c: string, rule: string) =>
    `${field} filter ${f} is invalid: cannot contain a ${what} character (${c}); FilterRules: ${rule}`;
  for (const f of filters as string[]) {
    if (f.length === 1) {
      if (f === '!') errs.push(invalid(field, 'a negation character is not a valid filter'));
      continue;
    }
    if (f.slice(1).includes('!'))
      errs.push(
        invalid(
          field,
          pattern(f, 'negation', '!', 'NegationChar can be only used at the beginning of the filter'),
        ),
      );
    if (f.slice(0, -1).includes('*'))
      errs.push(
        invalid(field, pattern(f, 'wildcard', '*', 'WildcardChar can be only at the end of the filter')),
      );
  }
  return errs;
}

/** A VirtualMachineClone on create or update (upstream validates both the same way). */
export function validateVirtualMachineClone(
  obj: CloneLike,
  config: ClusterConfig,
  operation: 'CREATE' | 'UPDATE',
): FieldError[] {
  if (operation === 'CREATE' && !config.isFeatureGateEnabled(FeatureGate.Snapshot))
    return [{ path: 'spec', message: 'snapshot feature gate is not enabled', type: 'FieldValueForbidden' }];
  const spec = obj.spec ?? {};
  const errs: FieldError[] = [
    ...filterErrors(spec.annotationFilters, 'spec.annotations'),
    ...filterErrors(spec.labelFilters, 'spec.labels'),
    ...filterErrors(spec.template?.annotationFilters, 'spec.template.annotations'),
    ...filterErrors(spec.template?.labelFilters, 'spec.template.labels'),
  ];
  const source = spec.source;
  const target = spec.target;
  if (source && source.kind !== 'VirtualMachine' && source.kind !== 'VirtualMachineSnapshot')
    errs.push(invalid('spec.Source.Kind', 'Source kind is not supported'));
  if (target && target.kind !== 'VirtualMachine')
    errs.push(invalid('spec.Target.Kind', 'Target kind is not supported'));
  if (!source) errs.push(invalid('spec.Source', 'Source cannot be nil'));
  else {
    if (typeof source.apiGroup !== 'string' || source.apiGroup === '')
      errs.push(invalid('spec.Source.APIGroup', "Source's APIGroup cannot be empty"));
    if (typeof source.kind !== 'string' || source.kind === '')
      errs.push(invalid('spec.Source', "Source's Kind cannot be empty"));
    if (typeof source.name !== 'string' || source.name === '')
      errs.push(invalid('spec.Source.Name', "Source's name cannot be empty"));
  }
  if (source?.kind === 'VirtualMachine' && target?.kind === 'VirtualMachine' && target.name === source.name)
    errs.push(
      invalid('spec.target.name', 'Target name cannot be equal to source name when both are VirtualMachines'),
    );
  const macs = spec.newMacAddresses;
  if (macs !== undefined && macs !== null) {
    if (typeof macs !== 'object' || Array.isArray(macs))
      errs.push(invalid('spec.newMacAddresses', 'must map interface names to MAC addresses'));
    else
      for (const [iface, mac] of Object.entries(macs as Record<string, unknown>))
        if (typeof mac !== 'string' || (mac !== '' && !MAC.test(mac)))
          errs.push(
            invalid(
              `spec.newMacAddresses.${iface}`,
              `interface ${iface} has malformed MAC address (${String(mac)}).`,
            ),
          );
  }
  const patches = spec.patches;
  if (patches !== undefined && patches !== null) {
    if (!Array.isArray(patches)) errs.push(invalid('spec.patches', 'patches must be a list of strings'));
    else
      patches.forEach((p, i) => {
        if (typeof p !== 'string' || !validJson(p))
          errs.push(invalid(`spec.patches[${i}]`, `patch is not valid JSON (${String(p)})`));
      });
  }
  const vnp = spec.volumeNamePolicy;
  if (vnp !== undefined && !VOLUME_NAME_POLICIES.includes(vnp as string))
    errs.push({
      path: 'spec.volumeNamePolicy',
      message: `Unsupported value: ${JSON.stringify(vnp)}: supported values: "RandomizeNames", "PrefixTargetName"`,
      type: 'FieldValueNotSupported',
    });
  return errs;
}

function validJson(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * upstream's clone-create-mutator: the target a clone names, or a VirtualMachine named
 * `clone-<source>-<suffix>` when it names none (or no name); undefined when nothing changes.
 */
export function defaultCloneTarget(obj: CloneLike, suffix: string): Ref | undefined {
  const spec = obj.spec ?? {};
  const name = `clone-${String(spec.source?.name ?? '')}-${suffix}`;
  if (!spec.target) return { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name };
  if (!spec.target.name) return { ...spec.target, name };
  return undefined;
}
