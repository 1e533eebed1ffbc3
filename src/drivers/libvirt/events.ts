/**
 * Typed async event streams: a subscription buffers events until the consumer reads them
 * with `for await` (or `next()`), and ends (iteration finishes) when closed, or throws
 * when the connection it came from is lost and cannot be resumed.
 */

/** An async-iterable queue of events. */
export class EventStream<T> implements AsyncIterableIterator<T> {
  private readonly queue: { ev: T; bytes: number }[] = [];
  private queuedBytes = 0;
  private waiters: Array<{ resolve: (r: IteratorResult<T>) => void; reject: (e: Error) => void }> = [];
  private ended = false;
  private error: Error | null = null;

  /**
   * @param onClose called once when the consumer closes the stream (e.g. to deregister
   *   the daemon-side callback).
   * @param maxBuffered events kept for a slow consumer; beyond it the oldest are dropped
   *   and counted in `dropped`, so a stalled reader cannot grow memory without bound.
   * @param maxBufferedBytes the same bound in bytes (as `push` sizes them; default 4 MiB):
   *   a count alone lets 10,000 large packets pile up.
   */
  constructor(
    private readonly onClose: () => void | Promise<void> = () => {},
    private readonly maxBuffered = 10_000,
    private readonly maxBufferedBytes = 4 * 1024 * 1024,
  ) {}

  /** Events discarded because the consumer fell more than `maxBuffered` behind. */
  dropped = 0;

  /** Delivers an event of `bytes` size (its wire size; called by the client). */
  push(ev: T, bytes = 0): void {
    if (this.ended) return;
    const w = this.waiters.shift();
    if (w) {
      w.resolve({ value: ev, done: false });
      return;
    }
    this.queue.push({ ev, bytes });
    this.queuedBytes += bytes;
    // The newest event is always kept, however large; older ones go first.
    while (
      this.queue.length > 1 &&
      (this.queue.length > this.maxBuffered || this.queuedBytes > this.maxBufferedBytes)
    ) {
      this.queuedBytes -= this.queue.shift()!.bytes;
      this.dropped++;
    }
  }

  /** Bytes of the events waiting to be read. */
  get bufferedBytes(): number {
    return this.queuedBytes;
  }

  /** Ends the stream with an error: readers get it after the buffered events. */
  fail(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.error = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  /** Ends the stream normally: readers finish after the buffered events. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const w of this.waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  get isEnded(): boolean {
    return this.ended;
  }

  next(): Promise<IteratorResult<T>> {
    const head = this.queue.shift();
    if (head) {
      this.queuedBytes -= head.bytes;
      return Promise.resolve({ value: head.ev, done: false });
    }
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Stops the subscription; the daemon-side callback is deregistered. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.end();
    await this.onClose();
  }

  async return(): Promise<IteratorResult<T>> {
    await this.close();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
