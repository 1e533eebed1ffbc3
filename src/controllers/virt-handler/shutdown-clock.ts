/**
 * When a deleted VMI's guest is killed rather than asked to shut down, as upstream's
 * virt-handler decides it (hasGracePeriodExpired): a grace period of 0 kills at once;
 * otherwise the grace period counts from the first shutdown signal, and the VMI's
 * current grace period (virt-api lowers it for `stop --grace-period`) decides, so a
 * shorter one given during a shutdown shortens it.
 */

/** What to tell the launcher now. */
export type ShutdownStep = { kill: true } | { kill: false; secondsLeft: number };

/** The first shutdown signal of each VMI (by uid) and the decision that follows from it. */
export class ShutdownClock {
  private readonly started = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The step for VMI `uid` whose grace period is now `graceSeconds`. */
  next(uid: string, graceSeconds: number): ShutdownStep {
    if (graceSeconds <= 0) return { kill: true };
    const t = this.now();
    const start = this.started.get(uid) ?? t;
    this.started.set(uid, start);
    const left = graceSeconds - (t - start) / 1000;
    if (left <= 0) return { kill: true };
    // upstream rounds to whole seconds, at least 1.
    return { kill: false, secondsLeft: Math.max(1, Math.ceil(left)) };
  }

  /** Forgets VMI `uid` (it is final). */
  forget(uid: string): void {
    this.started.delete(uid);
  }
}
