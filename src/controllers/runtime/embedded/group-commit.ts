/**
 * Group commit of the embedded store's journal: the lines of every write of one
 * event-loop turn go out in one write and one fsync; a failed write heals by snapshot.
 */
import { ApiError } from '../errors';
import type { Journal, StoredObject } from './journal';

/** Batches journal lines; one instance per persisted store. */
export class GroupCommit {
  private pending: string[] = [];
  /** Set after a failed journal write: the next flush rewrites the disk from memory (a snapshot). */
  private resync = false;
  private waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private flushScheduled = false;
  private syncing?: Promise<void>;

  /** `state` gives the store's current resourceVersion and objects, for snapshots. */
  constructor(
    private readonly journal: Journal,
    private readonly state: () => { rv: number; objects: Iterable<StoredObject> },
  ) {}

  /** Queues one journal line; resolves once it is on disk, rejects (500) when writing it failed. */
  commit(line: string): Promise<void> {
    this.pending.push(line);
    const p = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    return p;
  }

  /**
   * Group commit: writes every record queued this turn, then fsyncs off the event loop;
   * writes arriving meanwhile form the next batch, flushed when that fsync completes.
   * A failed write or fsync rejects its batch (500: its outcome is unknown, as after an etcd
   * timeout, since memory already holds it) and the next batch first rewrites the whole
   * state as a snapshot, which also drops a torn journal line: the store stays writable.
   * Returns false when there was nothing to do.
   */
  flush(): boolean {
    this.flushScheduled = false;
    const journal = this.journal;
    if (this.syncing || (this.pending.length === 0 && this.waiters.length === 0)) return false;
    const lines = this.pending;
    const waiters = this.waiters;
    this.pending = [];
    this.waiters = [];
    const fail = (err: unknown) => {
      this.resync = true;
      const e = new ApiError(
        500,
        'InternalError',
        `embedded store: writing ${journal.dir} failed: ${(err as Error).message}`,
      );
      for (const w of waiters) w.reject(e);
    };
    try {
      if (this.resync || journal.wantsSnapshot()) {
        // Memory holds every queued record already, so the snapshot covers this batch too.
        const { rv, objects } = this.state();
        journal.snapshot(rv, objects);
        this.resync = false;
      } else journal.write(lines);
    } catch (err) {
      fail(err);
      return true;
    }
    this.syncing = journal
      .sync()
      .then(() => {
        for (const w of waiters) w.resolve();
      }, fail)
      .finally(() => {
        this.syncing = undefined;
        this.flush();
      });
    return true;
  }

  /** Waits until everything queued or being written is on disk (or has failed). */
  async drain(): Promise<void> {
    while (this.syncing || this.pending.length || this.waiters.length) {
      if (this.syncing) await this.syncing;
      else if (!this.flush()) break;
    }
  }
}
