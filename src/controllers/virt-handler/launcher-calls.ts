/**
 * The node agent's calls on the launchers of its VMIs, counting each VMI's failed calls in a
 * row: the agent gives a launcher that does not answer a few tries before it calls it gone.
 */
import type { LauncherConnections } from './launcher-connections';

/** A launcher's command client, as the connections hand it out. */
export type LauncherCallClient = Awaited<ReturnType<LauncherConnections['get']>>;

/** The outcome of one call: its value, or why it failed. */
export type LauncherCallResult<T> = { ok: true; value: T } | { ok: false; error: Error };

/** Launcher calls with a count of failures in a row per VMI uid. */
export class LauncherCalls {
  private readonly failures = new Map<string, number>();

  constructor(private readonly conns: LauncherConnections) {}

  /** Runs `fn` on the client of the launcher in pod `podUid`, serving the VMI `vmiUid`. */
  async call<T>(
    podUid: string,
    vmiUid: string,
    fn: (c: LauncherCallClient) => Promise<T>,
  ): Promise<LauncherCallResult<T>> {
    try {
      const value = await fn(await this.conns.get(podUid));
      this.failures.delete(vmiUid);
      return { ok: true, value };
    } catch (error) {
      this.failures.set(vmiUid, (this.failures.get(vmiUid) ?? 0) + 1);
      return { ok: false, error: error as Error };
    }
  }

  /** How many calls for the VMI failed in a row; undefined after a success or none. */
  failuresOf(vmiUid: string): number | undefined {
    return this.failures.get(vmiUid);
  }

  /** Drops the VMI's count (its guest is over). */
  forget(vmiUid: string): void {
    this.failures.delete(vmiUid);
  }
}
