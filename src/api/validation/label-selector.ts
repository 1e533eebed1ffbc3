/** Kubernetes label selectors: validation and matching (metav1.LabelSelectorAsSelector semantics). */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { LabelSelector } from '../generated/types';
import { isQualifiedName, isValidLabelValue } from './names';

const operators = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** Problems with a selector's keys, operators and values. */
export function validateLabelSelector(field: FieldPath, selector: LabelSelector | undefined): FieldError[] {
  if (!selector) return [];
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    for (const m of isQualifiedName(k))
      errs.push(fieldError(field.child('matchLabels'), `Invalid value: "${k}": ${m}`));
    for (const m of isValidLabelValue(String(v))) {
      errs.push(fieldError(field.child('matchLabels').key(k), `Invalid value: "${v}": ${m}`));
    }
  }
  (selector.matchExpressions ?? []).forEach((e, i) => {
    const p = field.child('matchExpressions').index(i);
    if (!operators.includes(e.operator)) {
      errs.push(fieldError(p.child('operator'), `"${e.operator}" is not a valid label selector operator`));
    } else if ((e.operator === 'In' || e.operator === 'NotIn') && !e.values?.length) {
      errs.push(fieldError(p.child('values'), 'for In and NotIn operators, values set can not be empty'));
    } else if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && e.values?.length) {
      errs.push(fieldError(p.child('values'), 'values set must be empty for exists and does not exist'));
    }
    for (const m of isQualifiedName(e.key ?? ''))
      errs.push(fieldError(p.child('key'), `Invalid value: "${e.key}": ${m}`));
  });
  return errs;
}

/** Whether `labels` satisfy `selector`; a missing selector matches nothing, an empty one everything. */
export function labelSelectorMatches(
  selector: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, e.key);
    switch (e.operator) {
      case 'In':
        if (!has || !(e.values ?? []).includes(l[e.key])) return false;
        break;
      case 'NotIn':
        if (has && (e.values ?? []).includes(l[e.key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
