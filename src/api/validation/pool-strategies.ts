/**
 * Validation of a VirtualMachinePool's rollout fields (upstream's VM pool admitter, plus
 * the refusals of what this project does not build): `maxUnavailable` an integer above 0
 * or a percentage 1-100%; at most one update and one scale-in strategy; known sort
 * policies (node-selector operators are an enum of the schema); a parseable `minFailingToStartDuration`; and
 * `statePreservation` other than Disabled refused, since keeping a scaled-in VM's claims
 * and memory for reuse is not implemented.
 */
import { parseDuration } from '../duration';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachinePoolSelectionPolicy, VirtualMachinePoolSpec } from '../generated/types';
import { validateLabelSelector } from './label-selector';

/** Upstream's VirtualMachinePoolSortPolicy values. */
export const POOL_SORT_POLICIES = ['AscendingOrder', 'DescendingOrder', 'Newest', 'Oldest', 'Random'];

function oneStrategy(field: FieldPath, s: Record<string, unknown>): FieldError[] {
  const set = ['unmanaged', 'opportunistic', 'proactive'].filter((k) => s[k] !== undefined && s[k] !== null);
  return set.length > 1
    ? [
        fieldError(
          field,
          `only one strategy can be configured at a time: but found ${set.join(', ')} strategies`,
        ),
      ]
    : [];
}

function selectionPolicy(field: FieldPath, p: VirtualMachinePoolSelectionPolicy | undefined): FieldError[] {
  if (!p) return [];
  const errs: FieldError[] = [];
  if (p.sortPolicy !== undefined && !POOL_SORT_POLICIES.includes(p.sortPolicy))
    errs.push(
      fieldError(
        field.child('sortPolicy'),
        `Unsupported value: ${JSON.stringify(p.sortPolicy)}: supported values: ${POOL_SORT_POLICIES.join(', ')}`,
        'FieldValueNotSupported',
      ),
    );
  const sel = field.child('selectors');
  if (p.selectors?.labelSelector)
    errs.push(...validateLabelSelector(sel.child('labelSelector'), p.selectors.labelSelector));
  return errs;
}

function statePreservation(field: FieldPath, v: string | undefined): FieldError[] {
  if (v === undefined || v === 'Disabled') return [];
  return [
    fieldError(
      field.child('statePreservation'),
      `Unsupported value: ${JSON.stringify(v)}: only "Disabled" is supported; preserving the claims or memory of scaled-in VMs is not implemented`,
      'FieldValueNotSupported',
    ),
  ];
}

function maxUnavailable(field: FieldPath, v: string | number | undefined): FieldError[] {
  const f = field.child('maxUnavailable');
  if (v === undefined) return [];
  if (typeof v === 'number')
    return Number.isInteger(v) && v > 0 ? [] : [fieldError(f, 'maxUnavailable must be greater than 0')];
  if (!v.endsWith('%')) return [fieldError(f, 'maxUnavailable percentage must end with %')];
  const pct = v.slice(0, -1);
  if (!/^[+-]?\d+$/.test(pct))
    return [fieldError(f, `maxUnavailable percentage value ${JSON.stringify(pct)} is invalid`)];
  const n = Number(pct);
  return n <= 0 || n > 100
    ? [fieldError(f, `maxUnavailable percentage value ${n} must be between 1 and 100`)]
    : [];
}

/** Errors of the pool's maxUnavailable, update, scale-in and autohealing fields under `field` (spec). */
export function validatePoolStrategies(field: FieldPath, spec: VirtualMachinePoolSpec): FieldError[] {
  const errs = maxUnavailable(field, spec.maxUnavailable);
  const up = spec.updateStrategy;
  if (up) {
    errs.push(...oneStrategy(field.child('updateStrategy'), up as Record<string, unknown>));
    errs.push(
      ...selectionPolicy(
        field.child('updateStrategy', 'proactive', 'selectionPolicy'),
        up.proactive?.selectionPolicy,
      ),
    );
  }
  const sc = spec.scaleInStrategy;
  if (sc) {
    errs.push(...oneStrategy(field.child('scaleInStrategy'), sc as Record<string, unknown>));
    const pro = field.child('scaleInStrategy', 'proactive');
    errs.push(...selectionPolicy(pro.child('selectionPolicy'), sc.proactive?.selectionPolicy));
    errs.push(...statePreservation(pro, sc.proactive?.statePreservation));
    errs.push(
      ...statePreservation(
        field.child('scaleInStrategy', 'opportunistic'),
        sc.opportunistic?.statePreservation,
      ),
    );
  }
  const ah = spec.autohealing;
  if (ah?.startUpFailureThreshold !== undefined && !(ah.startUpFailureThreshold >= 1))
    errs.push(
      fieldError(
        field.child('autohealing', 'startUpFailureThreshold'),
        'startUpFailureThreshold must be at least 1',
      ),
    );
  if (ah?.minFailingToStartDuration !== undefined) {
    try {
      parseDuration(ah.minFailingToStartDuration, 'minFailingToStartDuration');
    } catch (err) {
      errs.push(fieldError(field.child('autohealing', 'minFailingToStartDuration'), (err as Error).message));
    }
  }
  return errs;
}
