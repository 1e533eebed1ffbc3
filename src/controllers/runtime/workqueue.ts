/**
 * A rate-limited work queue, with client-go's guarantees: an item queued several times is
 * processed once (dedup); an item is never handed to two workers at once (added while
 * being processed, it is queued again after `done`); items come out in the order they
 * were first added; `addRateLimited` delays by the rate limiter (per-item exponential
 * backoff and an overall token bucket); `shutDown` wakes waiting workers.
 */
import { ConflictError } from './errors';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter';

/**
 * What a queue reports to a metrics provider (client-go's workqueue MetricsProvider):
 * adds, retries, how long items waited and how long processing took, in seconds.
 */
export interface WorkQueueMetricsSink {
  added(): void;
  retried(): void;
  waited(seconds: number): void;
  worked(seconds: number): void;
}

/**
 * A deduplicating, rate-limited queue of keys for workers (see the file comment): `get`
 * an item, process it, then `done` it; `forget` clears its backoff after a success.
 */
export class WorkQueue<K = string> {
  private queue: K[] = [];
  private head = 0;
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly waiting = new Map<K, { at: number; timer: NodeJS.Timeout }>();
  private getters: ((item: K | undefined) => void)[] = [];
  private drained: (() => void)[] = [];
  private shuttingDown = false;
  readonly rateLimiter: RateLimiter<K>;
  private readonly metrics?: WorkQueueMetricsSink;
  /** With metrics: when each queued item was added, and when each in-process item was handed out. */
  private readonly addedAt = new Map<K, number>();
  private readonly startedAt = new Map<K, number>();

  constructor(options: { rateLimiter?: RateLimiter<K>; metrics?: WorkQueueMetricsSink } = {}) {
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<K>();
    this.metrics = options.metrics;
  }

  /** Seconds each item handed out and not yet done has been processed for (metrics). */
  inProgressSeconds(now = performance.now()): number[] {
    return [...this.startedAt.values()].map((t) => (now - t) / 1000);
  }

  private handOut(item: K): void {
    if (!this.metrics) return;
    const now = performance.now();
    const at = this.addedAt.get(item);
    this.addedAt.delete(item);
    if (at !== undefined) this.metrics.waited((now - at) / 1000);
    this.startedAt.set(item, now);
  }

  /** Queues `item` unless it is already queued. */
  add(item: K): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
    this.dirty.add(item);
    if (this.metrics) {
      this.metrics.added();
      if (!this.addedAt.has(item)) this.addedAt.set(item, performance.now());
    }
    if (this.processing.has(item)) return; // re-queued by done()
    const g = this.getters.shift();
    if (g) {
      this.dirty.delete(item);
      this.processing.add(item);
      this.handOut(item);
      g(item);
    } else this.queue.push(item);
  }

  /** Queues `item` after `ms` (an earlier pending add of the same item wins). */
  addAfter(item: K, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(item);
      return;
    }
    const at = Date.now() + ms;
    const cur = this.waiting.get(item);
    if (cur && cur.at <= at) return;
    if (cur) clearTimeout(cur.timer);
    const timer = setTimeout(() => {
      this.waiting.delete(item);
      this.add(item);
    }, ms);
    this.waiting.set(item, { at, timer });
  }

  /** Queues `item` after the rate limiter's delay (a failure is counted). */
  addRateLimited(item: K): void {
    this.metrics?.retried();
    this.addAfter(item, this.rateLimiter.when(item));
  }

  /** Clears the failure count of `item` (call after it succeeded). */
  forget(item: K): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: K): number {
    return this.rateLimiter.numRequeues(item);
  }

  /** Items queued (not counting delayed or in-process ones). */
  len(): number {
    return this.queue.length - this.head;
  }

  /** The next item, waiting for one; undefined once the queue is shut down. Call `done` after. */
  get(): Promise<K | undefined> {
    if (this.len() > 0) {
      const item = this.queue[this.head++];
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.dirty.delete(item);
      this.processing.add(item);
      this.handOut(item);
      return Promise.resolve(item);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((r) => this.getters.push(r));
  }

  /** Marks `item` processed; if it was added meanwhile, it is queued again. */
  done(item: K): void {
    this.processing.delete(item);
    const started = this.startedAt.get(item);
    if (started !== undefined) {
      this.startedAt.delete(item);
      this.metrics?.worked((performance.now() - started) / 1000);
    }
    if (this.dirty.has(item)) {
      this.dirty.delete(item);
      this.add(item);
    }
    if (this.processing.size === 0) {
      for (const d of this.drained) d();
      this.drained = [];
    }
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops handing out items; waiting `get` calls resolve undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const w of this.waiting.values()) clearTimeout(w.timer);
    this.waiting.clear();
    this.queue = [];
    this.head = 0;
    this.dirty.clear();
    this.addedAt.clear();
    for (const g of this.getters) g(undefined);
    this.getters = [];
  }

  /** Shuts down, then resolves when every item being processed is done. */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return;
    await new Promise<void>((r) => this.drained.push(r));
  }
}

/**
 * One worker over `queue` until it shuts down: each key reconciled (a number returned asks
 * for the key again after that many ms), a failure retried rate-limited and reported to
 * `onError` unless it is a conflict (a stale read, which the retry reads again).
 */
export async function runKeyWorker<K>(
  queue: WorkQueue<K>,
  reconcile: (key: K) => Promise<number | undefined>,
  onError: (key: K, err: Error) => void,
): Promise<void> {
  for (;;) {
    const key = await queue.get();
    if (key === undefined) return;
    try {
      const again = await reconcile(key);
      queue.forget(key);
      if (again !== undefined) queue.addAfter(key, again);
    } catch (err) {
      if (!(err instanceof ConflictError)) onError(key, err as Error);
      queue.addRateLimited(key);
    } finally {
      queue.done(key);
    }
  }
}
