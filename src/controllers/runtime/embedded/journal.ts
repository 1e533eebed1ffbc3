/**
 * Durable storage of the embedded store: an append-only JSON-lines journal plus a
 * snapshot, both fsync'ed. Every mutation appends one line (a batch is one write); once the journal holds
 * `snapshotEvery` lines, the whole state is written to a new snapshot (temp file, fsync,
 * atomic rename, directory fsync) and the journal is truncated. Loading reads the
 * snapshot and replays journal lines newer than it; a torn last line (crash mid-write) is
 * dropped, a corrupt line elsewhere is an error.
 */
import fs from 'node:fs';
import path from 'node:path';

/** One stored object: the storage key of its kind (`group/plural`) and the object. */
export interface StoredObject {
  kind: string;
  object: Record<string, unknown> & { metadata: { namespace?: string; name: string } };
}

/** A journal line: an object written, or removed. */
export type JournalRecord =
  | { rv: number; op: 'put'; kind: string; object: StoredObject['object'] }
  | { rv: number; op: 'del'; kind: string; namespace?: string; name: string };

interface Snapshot {
  version: 1;
  rv: number;
  objects: StoredObject[];
}

/** What `load` recovered. */
export interface Recovered {
  rv: number;
  objects: StoredObject[];
}

export interface JournalOptions {
  /** Journal lines before a snapshot compacts them (default 10000). */
  snapshotEvery?: number;
  /** fsync after every batch (default true; false only for benchmarks on throwaway dirs). */
  fsync?: boolean;
}

export class Journal {
  private fd = -1;
  private lines = 0;
  private lockFd = -1;
  private readonly snapshotEvery: number;
  private readonly fsync: boolean;
  private readonly journalPath: string;
  private readonly snapshotPath: string;
  private readonly lockPath: string;

  constructor(
    readonly dir: string,
    options: JournalOptions = {},
  ) {
    this.snapshotEvery = options.snapshotEvery ?? 10_000;
    this.fsync = options.fsync ?? true;
    this.journalPath = path.join(dir, 'journal.jsonl');
    this.snapshotPath = path.join(dir, 'snapshot.json');
    this.lockPath = path.join(dir, 'LOCK');
  }

  /** Locks the directory (one process at a time) and recovers the stored state. */
  load(): Recovered {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.lock();
    const byKey = new Map<string, StoredObject>();
    let rv = 0;
    if (fs.existsSync(this.snapshotPath)) {
      const snap = JSON.parse(fs.readFileSync(this.snapshotPath, 'utf8')) as Snapshot;
      if (snap.version !== 1)
        throw new Error(`${this.snapshotPath}: unknown snapshot version ${snap.version}`);
      rv = snap.rv;
      for (const o of snap.objects)
        byKey.set(keyOf(o.kind, o.object.metadata.namespace, o.object.metadata.name), o);
    }
    if (fs.existsSync(this.journalPath)) {
      const text = fs.readFileSync(this.journalPath, 'utf8');
      // Complete lines end in "\n"; a fragment after the last one is a torn write of a batch
      // that was never acknowledged (one write per batch), so it is dropped.
      const complete = text.lastIndexOf('\n') + 1;
      const lines = text.slice(0, complete).split('\n').slice(0, -1);
      for (const [i, line] of lines.entries()) {
        if (line === '') continue;
        let rec: JournalRecord;
        try {
          rec = JSON.parse(line) as JournalRecord;
        } catch (err) {
          throw new Error(`${this.journalPath}: line ${i + 1} is corrupt: ${(err as Error).message}`);
        }
        this.lines++;
        if (rec.rv <= rv) continue;
        rv = rec.rv;
        if (rec.op === 'put') {
          byKey.set(keyOf(rec.kind, rec.object.metadata.namespace, rec.object.metadata.name), {
            kind: rec.kind,
            object: rec.object,
          });
        } else byKey.delete(keyOf(rec.kind, rec.namespace, rec.name));
      }
      if (complete < text.length)
        fs.truncateSync(this.journalPath, Buffer.byteLength(text.slice(0, complete)));
    }
    const created = !fs.existsSync(this.journalPath);
    this.fd = fs.openSync(this.journalPath, 'a', 0o600);
    if (created) this.syncDir(); // the new file's directory entry must be durable too
    return { rv, objects: [...byKey.values()] };
  }

  /**
   * Appends records, each already serialized by `JSON.stringify` (one write; not yet
   * durable: call `sync`). The caller serializes before it changes memory, so a record
   * that cannot be serialized never reaches memory either.
   */
  write(lines: string[]): void {
    if (lines.length === 0) return;
    fs.writeSync(this.fd, lines.join('\n') + '\n');
    this.lines += lines.length;
  }

  /** Makes everything written so far durable (fsync, off the event loop). */
  sync(): Promise<void> {
    if (!this.fsync) return Promise.resolve();
    return new Promise((resolve, reject) => fs.fsync(this.fd, (err) => (err ? reject(err) : resolve())));
  }

  /** True when the journal has grown enough that `snapshot` should be called. */
  wantsSnapshot(): boolean {
    return this.lines >= this.snapshotEvery;
  }

  /** Writes the full state as the new snapshot and empties the journal. */
  snapshot(rv: number, objects: Iterable<StoredObject>): void {
    const tmp = `${this.snapshotPath}.tmp`;
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      fs.writeSync(fd, `{"version":1,"rv":${rv},"objects":[`);
      let first = true;
      for (const o of objects) {
        fs.writeSync(fd, (first ? '' : ',') + JSON.stringify(o));
        first = false;
      }
      fs.writeSync(fd, ']}');
      if (this.fsync) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.snapshotPath);
    this.syncDir();
    fs.ftruncateSync(this.fd, 0);
    if (this.fsync) fs.fsyncSync(this.fd);
    this.lines = 0;
  }

  close(): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    if (this.lockFd >= 0) {
      fs.closeSync(this.lockFd);
      fs.rmSync(this.lockPath, { force: true });
      this.lockFd = -1;
    }
  }

  private syncDir(): void {
    if (!this.fsync) return;
    const d = fs.openSync(this.dir, 'r');
    try {
      fs.fsyncSync(d);
    } finally {
      fs.closeSync(d);
    }
  }

  private lock(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        this.lockFd = fs.openSync(this.lockPath, 'wx', 0o600);
        fs.writeSync(this.lockFd, String(process.pid));
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const pid = Number(fs.readFileSync(this.lockPath, 'utf8'));
        if (pid && pid !== process.pid && isAlive(pid)) {
          throw new Error(
            `embedded store ${this.dir} is in use by process ${pid}; stop it or use another directory`,
          );
        }
        if (pid === process.pid) {
          throw new Error(`embedded store ${this.dir} is already open in this process; close it first`);
        }
        fs.rmSync(this.lockPath, { force: true }); // stale lock of a dead process
      }
    }
    throw new Error(`embedded store ${this.dir}: could not take the lock ${this.lockPath}`);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The storage key of one object. */
export function keyOf(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}|${namespace ?? ''}|${name}`;
}
