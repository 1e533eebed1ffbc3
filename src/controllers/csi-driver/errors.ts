/**
 * The CSI driver's errors: each carries the gRPC status code the CSI spec prescribes for
 * the case (NOT_FOUND, ALREADY_EXISTS, INVALID_ARGUMENT, ...), so the services throw and
 * the gRPC server (grpc-server.ts) answers with that code and the message.
 */
import { status } from '@grpc/grpc-js';

/** An error the driver answers with a given gRPC status code. */
export class CsiError extends Error {
  constructor(
    readonly code: status,
    message: string,
  ) {
    super(message);
    this.name = 'CsiError';
  }
}

/** INVALID_ARGUMENT naming the request field. */
export function invalid(field: string, why: string): CsiError {
  return new CsiError(status.INVALID_ARGUMENT, `${field}: ${why}`);
}

/** NOT_FOUND. */
export function notFound(message: string): CsiError {
  return new CsiError(status.NOT_FOUND, message);
}

/** FAILED_PRECONDITION. */
export function precondition(message: string): CsiError {
  return new CsiError(status.FAILED_PRECONDITION, message);
}
