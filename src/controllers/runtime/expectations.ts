/**
 * Expectations for creates and deletes (client-go's ControllerExpectations): after a
 * controller creates N children it must not act again on a cache that does not show
 * them yet, or it would create duplicates. It records what it expects; informer handlers
 * record what they observe; `satisfied` tells when the cache has caught up. Records expire
 * (default 5 minutes) so a lost event cannot block a controller forever.
 */
interface Record_ {
  add: number;
  del: number;
  at: number;
}

/**
 * Creations and deletions a controller awaits per owner key (client-go's
 * ControllerExpectations): act on a key only once `satisfied`, so a lagging cache cannot
 * cause duplicates. Records expire after `ttlMs` (default 5 minutes).
 */
export class Expectations {
  private readonly records = new Map<string, Record_>();

  constructor(
    private readonly ttlMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Expect `n` creations for `key` (replaces any previous record). */
  expectCreations(key: string, n: number): void {
    this.records.set(key, { add: n, del: 0, at: this.now() });
  }

  /** Expect `n` deletions for `key` (replaces any previous record). */
  expectDeletions(key: string, n: number): void {
    this.records.set(key, { add: 0, del: n, at: this.now() });
  }

  /** Adds to the expectations of `key`. */
  raise(key: string, add: number, del: number): void {
    const r = this.records.get(key);
    if (r) {
      r.add += add;
      r.del += del;
    } else this.records.set(key, { add, del, at: this.now() });
  }

  /** An informer saw a child of `key` created. */
  creationObserved(key: string): void {
    const r = this.records.get(key);
    if (r) r.add--;
  }

  /** An informer saw a child of `key` deleted. */
  deletionObserved(key: string): void {
    const r = this.records.get(key);
    if (r) r.del--;
  }

  /** True when nothing is pending for `key` (no record, all observed, or the record expired). */
  satisfied(key: string): boolean {
    const r = this.records.get(key);
    if (!r) return true;
    if (r.add <= 0 && r.del <= 0) return true;
    return this.now() - r.at > this.ttlMs;
  }

  /** Pending counts, for logs and tests. */
  pending(key: string): { add: number; del: number } | undefined {
    const r = this.records.get(key);
    return r ? { add: r.add, del: r.del } : undefined;
  }

  /** Forgets `key` (its owner was deleted). */
  delete(key: string): void {
    this.records.delete(key);
  }
}
