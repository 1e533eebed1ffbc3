/**
 * The embedded store's change log: the one place a change is applied. A put or a removal
 * takes the next resourceVersion of the store's single counter, then changes the object
 * index, is recorded for the watchers and is queued for the journal (group commit: its
 * promise resolves once the line is on disk), in that order. Apart from store.ts, which
 * decides what may change (the API semantics); this only applies it.
 */
import { apiVersionOf } from '../resources';
import { GroupCommit } from './group-commit';
import type { Journal, JournalRecord } from './journal';
import type { ObjectIndex } from './object-index';
import { serializeRecord } from './store-rules';
import type { StoredObj } from './store-types';
import type { TypeRegistry } from './type-registry';
import type { WatchHub } from './watch-hub';

/** Applies the store's changes to memory, watchers and disk. */
export class ChangeLog {
  /** The latest resourceVersion: every change bumps it. */
  rv = 0;
  private readonly commits?: GroupCommit;

  constructor(
    private readonly objects: ObjectIndex,
    private readonly registry: TypeRegistry,
    private readonly watches: WatchHub,
    journal: Journal | undefined,
  ) {
    if (journal) {
      this.commits = new GroupCommit(journal, () => ({ rv: this.rv, objects: this.objects.all() }));
    }
  }

  /** Stores `obj` of `kind` (`old`: what it replaces) and notifies watchers with `type`. */
  put(kind: string, obj: StoredObj, type: 'ADDED' | 'MODIFIED', old?: StoredObj): Promise<void> {
    const rv = this.rv + 1;
    obj.metadata.resourceVersion = String(rv);
    const stored = obj;
    const typ = this.registry.ofKind(kind)!;
    stored.apiVersion = apiVersionOf(typ);
    stored.kind = typ.kind;
    // Serialized (and its size checked) before anything changes: a refused write changes nothing.
    const line = serializeRecord(typ, { rv, op: 'put', kind, object: stored });
    this.rv = rv;
    this.objects.put(kind, stored, old);
    this.watches.record({ rv: this.rv, kind, type, obj: stored, old });
    return this.commit(line);
  }

  /**
   * Removes `current` (the object as stored) of `kind`; watchers see `obj` (its last state)
   * DELETED, `old` (default `current`) as what it was. Returns that last state and the commit.
   */
  remove(
    kind: string,
    current: StoredObj,
    obj: StoredObj,
    old?: StoredObj,
  ): { obj: StoredObj; done: Promise<void> } {
    this.rv++;
    const last = structuredClone(obj);
    last.metadata.resourceVersion = String(this.rv);
    this.objects.delete(kind, current);
    this.watches.record({ rv: this.rv, kind, type: 'DELETED', obj: last, old: old ?? current });
    const done = this.commit(
      JSON.stringify({
        rv: this.rv,
        op: 'del',
        kind,
        namespace: current.metadata.namespace,
        name: current.metadata.name,
      } satisfies JournalRecord),
    );
    return { obj: last, done };
  }

  /** Resolves once everything acknowledged or queued is on disk. */
  async drain(): Promise<void> {
    await this.commits?.drain();
  }

  private commit(line: string): Promise<void> {
    return this.commits ? this.commits.commit(line) : Promise.resolve();
  }
}
