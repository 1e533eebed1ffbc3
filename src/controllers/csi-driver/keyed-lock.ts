/**
 * Serialises operations on one key (a volume or snapshot ID) within the process: the CSI
 * spec lets a CO retry or repeat a call while the first is still running, and two
 * CreateVolume calls for one name must not both create it.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` once every earlier call for `key` has finished. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(fn, fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
