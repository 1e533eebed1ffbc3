/**
 * The informer's local cache: objects by `namespace/name` key, plus named secondary
 * indexes (an index function maps an object to the values it is found under, e.g. its
 * node name or its owner's uid). Readers get the cached object itself: treat it as
 * read-only and copy before changing it.
 */
import { objectKey } from './resources';
import type { KubeObject } from './types';

/** Maps an object to the index values it is listed under. */
export type IndexFunc<T extends KubeObject> = (obj: T) => string[];

/** Built-in index: by namespace. */
export const NAMESPACE_INDEX = 'namespace';
/** Built-in index: by the uid of the controller owner reference. */
export const CONTROLLER_UID_INDEX = 'controllerUid';

/**
 * An informer's cache: objects by `namespace/name` key, with the built-in namespace and
 * controller-uid indexes and any added with `addIndex`. Returns the cached objects
 * themselves: read-only.
 */
export class Indexer<T extends KubeObject = KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexFuncs = new Map<string, IndexFunc<T>>();
  /** index name -> value -> keys */
  private readonly indices = new Map<string, Map<string, Set<string>>>();

  constructor() {
    this.addIndex(NAMESPACE_INDEX, (o) => (o.metadata?.namespace ? [o.metadata.namespace] : []));
    this.addIndex(CONTROLLER_UID_INDEX, (o) => {
      const ref = o.metadata?.ownerReferences?.find((r) => r.controller);
      return ref ? [ref.uid] : [];
    });
  }

  /** Adds a named index; existing objects are indexed at once. */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexFuncs.has(name)) throw new Error(`index "${name}" already exists`);
    this.indexFuncs.set(name, fn);
    this.indices.set(name, new Map());
    for (const [key, obj] of this.items) this.indexOne(name, fn, key, obj);
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  /** The object `name` in `namespace` (omit the namespace for cluster-scoped kinds). */
  getByName(name: string, namespace?: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  get size(): number {
    return this.items.size;
  }

  /** Objects listed under `value` in index `name`. */
  byIndex(name: string, value: string): T[] {
    const idx = this.indices.get(name);
    if (!idx) throw new Error(`no index named "${name}"`);
    return [...(idx.get(value) ?? [])].map((k) => this.items.get(k)!);
  }

  /** Inserts or replaces; returns the previous object. */
  set(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (old) this.unindex(key, old);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexFuncs) this.indexOne(name, fn, key, obj);
    return old;
  }

  /** Removes by key; returns the removed object. */
  delete(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  private indexOne(name: string, fn: IndexFunc<T>, key: string, obj: T): void {
    const idx = this.indices.get(name)!;
    for (const v of fn(obj)) {
      let set = idx.get(v);
      if (!set) {
        set = new Set();
        idx.set(v, set);
      }
      set.add(key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexFuncs) {
      const idx = this.indices.get(name)!;
      for (const v of fn(obj)) {
        const set = idx.get(v);
        set?.delete(key);
        if (set?.size === 0) idx.delete(v);
      }
    }
  }
}
