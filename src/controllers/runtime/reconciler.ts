/** The `Reconciler` contract: make the world match one object's desired state, idempotently. */

/** Which object to reconcile (its namespace is omitted for cluster-scoped kinds). */
export interface Request {
  namespace?: string;
  name: string;
}

/** What to do after a successful reconcile. Throwing means: retry with backoff. */
export interface Result {
  /** Retry with the rate limiter's backoff. */
  requeue?: boolean;
  /** Look again after this many ms (e.g. to poll an external state). */
  requeueAfterMs?: number;
}

/** Passed to each `reconcile` call: the controller's name and when to give up. */
export interface ReconcileContext {
  /** Aborted when the manager shuts down or loses leadership. */
  signal: AbortSignal;
  /** The controller's name. */
  controller: string;
}

/**
 * Level-triggered: called with a key whenever the object or something it owns changed (or
 * on resync); reads current state (usually from informer caches) and acts. Must be
 * idempotent: it can run any number of times for the same state. Never called twice at
 * once for the same key.
 */
export interface Reconciler {
  // biome-ignore lint/suspicious/noConfusingVoidType: an async reconciler that returns nothing is the common case
  reconcile(request: Request, context: ReconcileContext): Promise<Result | undefined | void>;
}

/** Turns a plain function into a Reconciler. */
export function reconcilerFunc(fn: Reconciler['reconcile']): Reconciler {
  return { reconcile: fn };
}
