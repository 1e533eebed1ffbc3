/** Awaiting a launcher RPC that must fail, for assertions on its gRPC status and message. */
import type { LauncherCommandError } from '../../../src/controllers/launcher-protocol';

/** The error `p` rejects with; throws when it resolves. */
export async function failure(p: Promise<unknown>): Promise<LauncherCommandError> {
  try {
    await p;
  } catch (e) {
    return e as LauncherCommandError;
  }
  throw new Error('expected the call to fail');
}
