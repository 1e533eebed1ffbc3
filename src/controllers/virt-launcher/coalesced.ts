/**
 * A serialised, coalescing runner: calls made while a run is in flight join it and cause
 * one more run after it (not one each), so a burst of domain events costs at most two
 * looks at the domain and every caller's promise settles after a look that began after it.
 */

/** Wraps `run` (errors go to `onError`, never to callers). */
export function coalesced(run: () => Promise<void>, onError: (e: Error) => void): () => Promise<void> {
  let inFlight: Promise<void> | undefined;
  let again = false;
  return () => {
    if (inFlight) {
      again = true;
      return inFlight;
    }
    inFlight = (async () => {
      do {
        again = false;
        await run().catch((e) => onError(e as Error));
      } while (again);
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}
