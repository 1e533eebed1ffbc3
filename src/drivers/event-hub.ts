/**
 * Fans domain events out to any number of `for await` subscribers. Each subscriber
 * has its own unbounded buffer, so a slow reader never loses events and never blocks
 * the producer; leaving the loop (or `close()`) ends the subscription.
 */
export class EventHub<T> {
  private readonly subscribers = new Set<Subscriber<T>>();
  private closed = false;

  /** Delivers `event` to every current subscriber. */
  publish(event: T): void {
    for (const s of this.subscribers) s.push(event);
  }

  /** Number of live subscriptions. */
  get size(): number {
    return this.subscribers.size;
  }

  /** A new subscription, starting with the next published event. */
  subscribe(): AsyncIterableIterator<T> {
    const sub = new Subscriber<T>(() => this.subscribers.delete(sub));
    if (this.closed) sub.end();
    else this.subscribers.add(sub);
    return sub;
  }

  /** Ends every subscription; later subscriptions end at once. */
  close(): void {
    this.closed = true;
    for (const s of [...this.subscribers]) s.end();
    this.subscribers.clear();
  }
}

class Subscriber<T> implements AsyncIterableIterator<T> {
  private readonly buffer: T[] = [];
  private waiting: ((r: IteratorResult<T>) => void) | undefined;
  private done = false;

  constructor(private readonly onEnd: () => void) {}

  push(value: T): void {
    if (this.done) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w({ value, done: false });
    } else {
      this.buffer.push(value);
    }
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    this.onEnd();
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.buffer.length > 0) {
      return Promise.resolve({ value: this.buffer.shift() as T, done: false });
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.buffer.length = 0;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
