/** The one error type drivers reject with, so callers can branch on `code`. */

/** Why a driver operation failed. */
export type DriverErrorCode =
  /** The domain (or other object) does not exist. */
  | 'NotFound'
  /** The operation does not fit the domain's state (e.g. pause a stopped domain). */
  | 'InvalidState'
  /** The driver or host cannot do this (e.g. KVM missing and emulation not allowed). */
  | 'Unsupported'
  /** The VMI is invalid for this driver; the message names the field path. */
  | 'Invalid'
  /** The hypervisor reported an error. */
  | 'Hypervisor'
  /** A fault injected by a test (fake driver). */
  | 'Injected';

/** A failed driver operation. The message names the object and what to do. */
export class DriverError extends Error {
  override readonly name = 'DriverError';
  constructor(
    readonly code: DriverErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True when `err` is a `DriverError` with `code`. */
export function isDriverError(err: unknown, code?: DriverErrorCode): err is DriverError {
  return err instanceof DriverError && (code === undefined || err.code === code);
}
