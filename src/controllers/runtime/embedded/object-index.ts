/**
 * The embedded store's objects by storage kind and key (`namespace/name`), with the two
 * indexes garbage collection needs: uid -> object, and owner uid -> dependents.
 */
import type { StoredObject } from './journal';
import { keyOfObj } from './store-rules';
import type { StoredObj } from './store-types';

/** A stored object with its storage kind. */
export interface KindedObj {
  kind: string;
  obj: StoredObj;
}

/** Objects of one store, indexed. */
export class ObjectIndex {
  private readonly objects = new Map<string, Map<string, StoredObj>>();
  /** uid -> [storage kind, object key] */
  private readonly byUid = new Map<string, { kind: string; key: string }>();
  /** owner uid -> keys of dependents (`kind|ns/name`) */
  private readonly dependents = new Map<string, Set<string>>();

  /** Makes a storage kind known (it then lists empty rather than missing). */
  addKind(kind: string): void {
    if (!this.objects.has(kind)) this.objects.set(kind, new Map());
  }

  /** The objects of a kind, by key. */
  ofKind(kind: string): ReadonlyMap<string, StoredObj> {
    return this.objects.get(kind) ?? new Map();
  }

  find(kind: string, ns: string | undefined, name: string): StoredObj | undefined {
    return this.objects.get(kind)?.get(`${ns ?? ''}/${name}`);
  }

  /** Stores `obj`, replacing `old` (the object it updates) in the indexes. */
  put(kind: string, obj: StoredObj, old?: StoredObj): void {
    if (old) this.unindex(kind, old);
    this.addKind(kind);
    this.objects.get(kind)!.set(keyOfObj(obj), obj);
    this.index(kind, obj);
  }

  /** Removes `obj` (the stored copy) and its index entries. */
  delete(kind: string, obj: StoredObj): void {
    this.unindex(kind, obj);
    this.objects.get(kind)?.delete(keyOfObj(obj));
  }

  /** The object with this uid. */
  byUidLookup(uid: string): KindedObj | undefined {
    const loc = this.byUid.get(uid);
    if (!loc) return undefined;
    const obj = this.objects.get(loc.kind)?.get(loc.key);
    return obj ? { kind: loc.kind, obj } : undefined;
  }

  /** Objects whose ownerReferences name this uid. */
  dependentsOf(uid: string): KindedObj[] {
    const out: KindedObj[] = [];
    for (const full of this.dependents.get(uid) ?? []) {
      const bar = full.indexOf('|');
      const kind = full.slice(0, bar);
      const obj = this.objects.get(kind)?.get(full.slice(bar + 1));
      if (obj) out.push({ kind, obj });
    }
    return out;
  }

  /** Every stored object with its storage kind. */
  *entries(): Iterable<KindedObj> {
    for (const [kind, objs] of this.objects) for (const obj of objs.values()) yield { kind, obj };
  }

  /** Every stored object with its storage kind (what a snapshot holds). */
  *all(): Iterable<StoredObject> {
    for (const [kind, objs] of this.objects) for (const object of objs.values()) yield { kind, object };
  }

  private index(kind: string, obj: StoredObj): void {
    const key = keyOfObj(obj);
    this.byUid.set(obj.metadata.uid, { kind, key });
    for (const ref of obj.metadata.ownerReferences ?? []) {
      let set = this.dependents.get(ref.uid);
      if (!set) {
        set = new Set();
        this.dependents.set(ref.uid, set);
      }
      set.add(`${kind}|${key}`);
    }
  }

  private unindex(kind: string, obj: StoredObj): void {
    const key = keyOfObj(obj);
    this.byUid.delete(obj.metadata.uid);
    for (const ref of obj.metadata.ownerReferences ?? []) {
      const set = this.dependents.get(ref.uid);
      set?.delete(`${kind}|${key}`);
      if (set?.size === 0) this.dependents.delete(ref.uid);
    }
  }
}
