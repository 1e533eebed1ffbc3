/**
 * What upstream's VMIRS and VM pool admitters both check of a set of replicas: a replica
 * count that is not negative, and a valid selector that matches the template's labels.
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { LabelSelector } from '../generated/types';
import { labelSelectorMatches, validateLabelSelector } from './label-selector';

/** Errors of `spec.replicas` and `spec.selector` (under `field`) against the template's labels. */
export function validateReplicasAndSelector(
  field: FieldPath,
  spec: { replicas?: number; selector?: LabelSelector },
  templateLabels: Record<string, string> | undefined,
): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.replicas !== undefined && spec.replicas < 0) {
    errs.push(
      fieldError(
        field.child('replicas'),
        `Invalid value: ${spec.replicas}: must be greater than or equal to 0`,
      ),
    );
  }
  const selectorErrs = validateLabelSelector(field.child('selector'), spec.selector);
  if (selectorErrs.length > 0) errs.push(...selectorErrs);
  else if (!labelSelectorMatches(spec.selector, templateLabels)) {
    errs.push(fieldError(field.child('selector'), 'selector does not match labels.'));
  }
  return errs;
}
