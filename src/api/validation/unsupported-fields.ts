/**
 * Refuses the fields kubevirt-ts does not implement, from the field-support registry
 * (field-support/), so a spec never has a field accepted and silently ignored. Entries
 * whose refusal a specific rule already makes (`rule`) are left to that rule.
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import {
  dataVolumeFieldSupport,
  type FieldRegistry,
  isRefused,
  vmFieldSupport,
  vmiFieldSupport,
} from './field-support';
import { findSetFields } from './field-support/registry-types';

/** The message of a registry refusal, as the audit and docs/unsupported-fields.md expect it. */
export function unsupportedFieldMessage(path: string, reason: string): string {
  return `${path} is not supported by kubevirt-ts: ${reason}`;
}

/** Errors for every refused field of `registry` that `spec` (sitting at `field`) sets. */
export function validateUnsupportedFields(
  field: FieldPath,
  spec: unknown,
  registry: FieldRegistry,
): FieldError[] {
  const errs: FieldError[] = [];
  for (const [pattern, support] of Object.entries(registry)) {
    if (!isRefused(support) || support.rule) continue;
    for (const path of findSetFields(spec, pattern, field, support.allowed)) {
      errs.push(fieldError(path, unsupportedFieldMessage(path, support.refused), 'FieldValueNotSupported'));
    }
  }
  return errs;
}

/** Refused fields of a VirtualMachineInstanceSpec at `field`. */
export function validateUnsupportedVmiFields(field: FieldPath, spec: unknown): FieldError[] {
  return validateUnsupportedFields(field, spec, vmiFieldSupport);
}

/** Refused fields of a VirtualMachineSpec at `field` outside its template. */
export function validateUnsupportedVmFields(field: FieldPath, spec: unknown): FieldError[] {
  return validateUnsupportedFields(field, spec, vmFieldSupport);
}

/** Refused fields of a DataVolumeSpec at `field` that validateDataVolume's own rules leave. */
export function validateUnsupportedDataVolumeFields(field: FieldPath, spec: unknown): FieldError[] {
  return validateUnsupportedFields(field, spec, dataVolumeFieldSupport);
}
