/**
 * Garbage collection of the embedded store, as kube-controller-manager's garbage collector
 * and namespace controller do it on a cluster:
 * - an object whose owners are all gone is deleted (background);
 * - an owner deleted with `foregroundDeletion` waits until its dependents are gone;
 * - an owner deleted with `orphan` first strips its ownerReference from its dependents;
 * - a terminating namespace is emptied, then removed.
 * Work is keyed by uid and processed after the write that caused it, off the caller's path.
 */
import { isConflict, isNotFound } from '../errors';
import { runtimeError } from '../runtime-log';
import type { EmbeddedStore, StoredObj } from './store';
import type { TypedLookups } from './typed-lookups';

export class GarbageCollector {
  private readonly queue = new Set<string>();
  private scheduled = false;
  private running = false;
  private stopped = false;

  constructor(
    private readonly store: EmbeddedStore,
    private readonly lookups: TypedLookups,
  ) {}

  /** Re-examines the object with this uid (and its dependents) soon. */
  enqueue(uid: string | undefined): void {
    if (!uid || this.stopped) return;
    this.queue.add(uid);
    this.schedule();
  }

  /** One run at a time: two interleaved at their awaits processed one namespace twice. */
  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    setImmediate(() => void this.run());
  }

  /** After a restart: re-examines every object that is deleting or has owners. */
  enqueueAll(): void {
    for (const uid of this.lookups.deletingUids()) this.enqueue(uid);
  }

  stop(): void {
    this.stopped = true;
    this.queue.clear();
  }

  private async run(): Promise<void> {
    this.scheduled = false;
    this.running = true;
    const uids = [...this.queue];
    this.queue.clear();
    try {
      for (const uid of uids) {
        if (this.stopped) return;
        try {
          await this.process(uid);
        } catch (err) {
          if (isConflict(err))
            this.queue.add(uid); // raced with another writer: look again
          else if (!isNotFound(err))
            runtimeError(`embedded store garbage collector: ${uid}: ${(err as Error).message}`);
        }
      }
    } finally {
      this.running = false;
      if (this.queue.size > 0 && !this.stopped) this.schedule();
    }
  }

  private async process(uid: string): Promise<void> {
    const owner = this.lookups.byUid(uid);
    const deps = this.lookups.dependentsOf(uid);
    if (!owner) {
      // The owner is gone: delete dependents with no other live owner; drop dangling references.
      for (const d of deps) {
        const others = (d.obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
        const alive = others.filter((r) => this.lookups.byUid(r.uid));
        if (alive.length === 0) {
          if (!d.obj.metadata.deletionTimestamp) {
            await this.store.delete(d.type, d.obj.metadata.name, {
              namespace: d.obj.metadata.namespace,
              preconditions: { uid: d.obj.metadata.uid },
              propagationPolicy: 'Background',
            });
          }
        } else await this.setOwners(d.type, d.obj, others);
      }
      return;
    }
    const { type, obj } = owner;
    if (
      obj.metadata.ownerReferences?.some((r) => !this.lookups.byUid(r.uid)) &&
      !obj.metadata.deletionTimestamp
    ) {
      for (const r of obj.metadata.ownerReferences) this.enqueue(r.uid);
    }
    if (!obj.metadata.deletionTimestamp) return;
    const finalizers = obj.metadata.finalizers ?? [];
    if (finalizers.includes('orphan')) {
      for (const d of deps) {
        await this.setOwners(
          d.type,
          d.obj,
          (d.obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid),
        );
      }
      await this.dropFinalizer(type, obj, 'orphan');
      return;
    }
    if (finalizers.includes('foregroundDeletion')) {
      const waiting = deps.filter(
        (d) => !d.obj.metadata.deletionTimestamp || d.obj.metadata.finalizers?.length,
      );
      for (const d of deps) {
        if (d.obj.metadata.deletionTimestamp) continue;
        await this.store.delete(d.type, d.obj.metadata.name, {
          namespace: d.obj.metadata.namespace,
          preconditions: { uid: d.obj.metadata.uid },
          propagationPolicy: 'Foreground',
        });
      }
      if (waiting.length === 0 && this.lookups.dependentsOf(uid).length === 0) {
        await this.dropFinalizer(type, obj, 'foregroundDeletion');
      }
      return;
    }
    if (type.kind === 'Namespace' && type.group === '') {
      const contents = this.lookups.contentsOf(obj.metadata.name);
      for (const c of contents) {
        if (c.obj.metadata.deletionTimestamp) continue;
        await this.store.delete(c.type, c.obj.metadata.name, {
          namespace: c.obj.metadata.namespace,
          preconditions: { uid: c.obj.metadata.uid },
        });
      }
      if (this.lookups.contentsOf(obj.metadata.name).length === 0) await this.store.finishNamespace(obj);
    }
  }

  private async setOwners(
    type: Parameters<EmbeddedStore['update']>[0],
    obj: StoredObj,
    refs: NonNullable<StoredObj['metadata']['ownerReferences']>,
  ): Promise<void> {
    const next = structuredClone(obj);
    if (refs.length) next.metadata.ownerReferences = refs;
    else delete next.metadata.ownerReferences;
    await this.store.update(type, next);
  }

  private async dropFinalizer(
    type: Parameters<EmbeddedStore['update']>[0],
    obj: StoredObj,
    f: string,
  ): Promise<void> {
    const current = this.lookups.byUid(obj.metadata.uid);
    if (!current) return;
    const next = structuredClone(current.obj);
    next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((x) => x !== f);
    await this.store.update(type, next);
  }
}
