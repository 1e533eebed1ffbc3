/**
 * The converter's one error: a VMI that cannot become a domain, located by the field path
 * of the offending value (`spec.domain.devices.disks[1].serial`), in the same shape as the
 * API layer's validation errors.
 */
import { type FieldError, fieldError, formatFieldError } from '../api/errors';

/** A VMI field that cannot be converted; `message` reads `<Kind>/<name>: <path>: <why>`. */
export class ConversionError extends Error {
  readonly field: FieldError;
  constructor(
    readonly objectName: string,
    path: string,
    reason: string,
  ) {
    const field = fieldError(path, reason);
    super(formatFieldError('VirtualMachineInstance', objectName, field));
    this.name = 'ConversionError';
    this.field = field;
  }
}
