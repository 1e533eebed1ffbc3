/** A token bucket: `qps` tokens per second, holding at most `burst` (`qps` Infinity: no limit). Shared by the client's QPS limit and the work queue's overall limit. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(qps > 0) || !(burst >= 1))
      throw new Error(`TokenBucket: qps must be > 0 and burst >= 1 (got ${qps}, ${burst})`);
    this.tokens = burst;
    this.last = now();
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
  }

  /** Reserves one token and returns how many milliseconds to wait before using it. */
  reserve(): number {
    // No limit at all: a client of the embedded store (see KubeClientOptions.qps).
    if (this.qps === Number.POSITIVE_INFINITY) return 0;
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Waits until a token is available. */
  async take(): Promise<void> {
    const wait = this.reserve();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
}
