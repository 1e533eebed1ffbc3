/** Exponential backoff with jitter for retry loops (watch restarts, relists, request retries). */
export interface BackoffOptions {
  /** First delay in ms (default 100). */
  initialMs?: number;
  /** Cap in ms (default 30000). */
  maxMs?: number;
  /** Growth factor (default 2). */
  factor?: number;
  /** Random extra fraction of the delay, 0..1 (default 0.2). */
  jitter?: number;
}

/**
 * Exponential backoff state for one retry loop: `next()`/`wait()` grow the delay by
 * `factor` up to `maxMs`, with jitter; `reset()` after a success.
 */
export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 100;
    this.maxMs = options.maxMs ?? 30_000;
    this.factor = options.factor ?? 2;
    this.jitter = options.jitter ?? 0.2;
  }

  /** The next delay in ms; every call grows it until the cap. Never 0. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * this.factor ** this.attempt);
    this.attempt++;
    return Math.max(1, base * (1 + Math.random() * this.jitter));
  }

  /** Back to the initial delay (after a success). */
  reset(): void {
    this.attempt = 0;
  }

  /** Sleeps for `next()` ms, or until `signal` aborts. */
  async wait(signal?: AbortSignal): Promise<void> {
    const ms = this.next();
    await sleep(ms, signal);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
