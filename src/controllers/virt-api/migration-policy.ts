/**
 * Validation of `migrations.kubevirt.io` MigrationPolicy objects, as upstream's
 * migration-policy admitter: quantities and timeouts must not be negative, and the
 * selectors must be label maps; the settings kubevirt-ts does not implement are refused
 * with the reason (field-support/migration-fields.ts).
 */
import { parseQuantity } from '../../api/config/quantity';
import { type FieldError, FieldPath } from '../../api/errors';
import { migrationPolicyFieldSupport } from '../../api/validation/field-support';
import { validateObjectMeta } from '../../api/validation/names';
import { validateUnsupportedFields } from '../../api/validation/unsupported-fields';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Field errors of a MigrationPolicy. */
export function validateMigrationPolicy(obj: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [...validateObjectMeta(obj.metadata as never)];
  const spec = obj.spec;
  if (!isObject(spec))
    return [...errors, { path: 'spec', message: 'Required value', type: 'FieldValueRequired' }];
  const bw = spec.bandwidthPerMigration;
  if (bw !== undefined) {
    let parsed: ReturnType<typeof parseQuantity> | undefined;
    try {
      parsed = parseQuantity(bw as string);
    } catch {
      parsed = undefined;
    }
    if (!parsed) {
      errors.push({
        path: 'spec.bandwidthPerMigration',
        message: `${JSON.stringify(bw)} is not a quantity`,
        type: 'FieldValueInvalid',
      });
    } else if (String(bw).trim().startsWith('-')) {
      errors.push({
        path: 'spec.bandwidthPerMigration',
        message: 'must not be negative',
        type: 'FieldValueInvalid',
      });
    }
  }
  const t = spec.completionTimeoutPerGiB;
  if (t !== undefined && (typeof t !== 'number' || !Number.isInteger(t) || t < 0)) {
    errors.push({
      path: 'spec.completionTimeoutPerGiB',
      message: 'must be a whole number >= 0',
      type: 'FieldValueInvalid',
    });
  }
  const d = spec.maxDowntimeMs;
  if (d !== undefined && (typeof d !== 'number' || !Number.isInteger(d) || d < 1)) {
    errors.push({
      path: 'spec.maxDowntimeMs',
      message: 'must be a whole number >= 1 (milliseconds)',
      type: 'FieldValueInvalid',
    });
  }
  const sel = spec.selectors;
  if (sel !== undefined) {
    if (!isObject(sel))
      errors.push({ path: 'spec.selectors', message: 'an object is required', type: 'FieldValueInvalid' });
    else {
      for (const k of ['namespaceSelector', 'virtualMachineInstanceSelector']) {
        const m = sel[k];
        if (m !== undefined && (!isObject(m) || Object.values(m).some((v) => typeof v !== 'string'))) {
          errors.push({
            path: `spec.selectors.${k}`,
            message: 'a map of label values is required',
            type: 'FieldValueInvalid',
          });
        }
      }
    }
  }
  errors.push(...validateUnsupportedFields(FieldPath.of('spec'), spec, migrationPolicyFieldSupport));
  return errors;
}
