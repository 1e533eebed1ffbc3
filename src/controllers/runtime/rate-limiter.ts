/** Rate limiters of the work queue: how long an item waits before it is retried. */
import { TokenBucket } from './token-bucket';

/** Decides how long a failed work-queue item waits before its retry (client-go's RateLimiter). */
export interface RateLimiter<K> {
  /** Delay in ms before `item` may be processed again (counts a failure). */
  when(item: K): number;
  /** The item succeeded: forget its failures. */
  forget(item: K): void;
  /** Failures counted for `item`. */
  numRequeues(item: K): number;
}

/** Per item: base * 2^failures, capped. */
export class ItemExponentialRateLimiter<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    readonly baseMs = 5,
    readonly maxMs = 1000_000,
  ) {}

  when(item: K): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    return Math.min(this.maxMs, this.baseMs * 2 ** n);
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/** Overall: a token bucket shared by all items (qps, burst). */
export class BucketRateLimiter<K> implements RateLimiter<K> {
  private readonly bucket: TokenBucket;

  constructor(qps = 10, burst = 100) {
    this.bucket = new TokenBucket(qps, burst);
  }

  when(_item: K): number {
    return this.bucket.reserve();
  }

  forget(_item: K): void {}

  numRequeues(_item: K): number {
    return 0;
  }
}

/** The longest delay of several limiters. */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  private readonly limiters: RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    this.limiters = limiters;
  }

  when(item: K): number {
    return Math.max(0, ...this.limiters.map((l) => l.when(item)));
  }

  forget(item: K): void {
    for (const l of this.limiters) l.forget(item);
  }

  numRequeues(item: K): number {
    return Math.max(0, ...this.limiters.map((l) => l.numRequeues(item)));
  }
}

/** client-go's default: per-item 5 ms..1000 s exponential, and 10 qps / 100 burst overall. */
export function defaultControllerRateLimiter<K>(): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialRateLimiter<K>(5, 1000_000),
    new BucketRateLimiter<K>(10, 100),
  );
}
