/**
 * An error a launcher RPC answers with a gRPC status (as upstream's launcher does for
 * SEV and migration calls) instead of `{ success: false }`, so the caller can tell
 * "this launcher cannot" (UNIMPLEMENTED, FAILED_PRECONDITION) from "it failed".
 */
import type { status } from '@grpc/grpc-js';

/** A launcher failure carried as a gRPC status code plus message. */
export class LauncherRpcError extends Error {
  override readonly name = 'LauncherRpcError';
  constructor(
    /** The gRPC status code (`status.UNIMPLEMENTED`, ...). */
    readonly code: status,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
