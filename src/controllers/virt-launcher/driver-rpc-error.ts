/**
 * Driver failures as gRPC statuses for the launcher's SEV and migration RPCs (upstream's
 * launcher answers these with status errors): what the driver cannot do here becomes
 * FAILED_PRECONDITION, a missing domain NOT_FOUND, bad input INVALID_ARGUMENT, anything
 * else INTERNAL. The message names the VMI and the step that failed.
 */
import { status } from '@grpc/grpc-js';
import { isDriverError } from '../../drivers/errors';
import { LauncherRpcError } from '../launcher-protocol/rpc-error';

/** `err` as a `LauncherRpcError` whose message starts with `subject: what:`. */
export function driverRpcError(err: unknown, subject: string, what: string): LauncherRpcError {
  if (err instanceof LauncherRpcError) return err;
  const message = `${subject}: ${what}: ${err instanceof Error ? err.message : String(err)}`;
  let code = status.INTERNAL;
  if (isDriverError(err, 'NotFound')) code = status.NOT_FOUND;
  else if (isDriverError(err, 'Unsupported') || isDriverError(err, 'InvalidState'))
    code = status.FAILED_PRECONDITION;
  else if (isDriverError(err, 'Invalid')) code = status.INVALID_ARGUMENT;
  return new LauncherRpcError(code, message, { cause: err });
}
