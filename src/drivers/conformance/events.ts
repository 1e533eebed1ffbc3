/** Waiting for domain events with a deadline, for the conformance suite and tests. */
import type { DomainEvent, HypervisorDriver } from '../driver';

/** A live event subscription that remembers everything it saw. */
export interface EventRecorder {
  /** Every event seen so far, in order. */
  readonly seen: DomainEvent[];
  /** Resolves with the first event (seen earlier or later) matching `match`; rejects after `timeoutMs`. */
  waitFor(match: (e: DomainEvent) => boolean, timeoutMs: number, what: string): Promise<DomainEvent>;
  /** Ends the subscription. */
  stop(): void;
}

/** Subscribes to `driver.events()` and records them until `stop()`. */
export function recordEvents(driver: HypervisorDriver): EventRecorder {
  const seen: DomainEvent[] = [];
  const waiters = new Set<{ match: (e: DomainEvent) => boolean; resolve: (e: DomainEvent) => void }>();
  const iterator = driver.events()[Symbol.asyncIterator]();
  let stopped = false;
  void (async () => {
    while (!stopped) {
      const r = await iterator.next();
      if (r.done) return;
      seen.push(r.value);
      for (const w of [...waiters]) {
        if (w.match(r.value)) {
          waiters.delete(w);
          w.resolve(r.value);
        }
      }
    }
  })();
  return {
    seen,
    waitFor(match, timeoutMs, what) {
      const earlier = seen.find(match);
      if (earlier) return Promise.resolve(earlier);
      return new Promise((resolve, reject) => {
        const w = {
          match,
          resolve: (e: DomainEvent) => {
            clearTimeout(timer);
            resolve(e);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(
            new Error(`no ${what} event within ${timeoutMs} ms; saw ${JSON.stringify(seen.slice(-20))}`),
          );
        }, timeoutMs);
        waiters.add(w);
      });
    },
    stop() {
      stopped = true;
      void iterator.return?.();
    },
  };
}
