/**
 * Read-modify-write against the API server, again on a conflict: client-go's
 * `retry.RetryOnConflict`. The write function must read the object itself each attempt, so a
 * retry edits the version that won.
 */
import { isConflict } from './errors';

/**
 * Runs `write` until it succeeds or fails with something other than a conflict; after
 * `attempts` conflicts the last one is thrown. Backs off 10 ms, 20 ms, ... between attempts.
 */
export async function retryOnConflict<T>(write: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (e) {
      if (!isConflict(e) || attempt >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 10 * attempt));
    }
  }
}
