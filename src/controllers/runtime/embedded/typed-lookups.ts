/**
 * Lookups over the embedded store's objects that answer with each object's kind as a
 * `ResourceType`: what the garbage collector asks (by uid, dependents of an owner, a
 * namespace's contents, what is mid-deletion after a restart) and whether a namespace
 * still holds anything. Read-only: writes go through the store.
 */
import type { ResourceType } from '../types';
import type { ObjectIndex } from './object-index';
import type { StoredObj } from './store-types';
import type { TypeRegistry } from './type-registry';

/** An object with its kind. */
export interface TypedObj {
  type: ResourceType;
  obj: StoredObj;
}

/** Typed lookups over one store's index and type registry. */
export class TypedLookups {
  constructor(
    private readonly objects: ObjectIndex,
    private readonly registry: TypeRegistry,
  ) {}

  /** The object with this uid, and its kind. */
  byUid(uid: string): TypedObj | undefined {
    const found = this.objects.byUidLookup(uid);
    return found && { type: this.registry.ofKind(found.kind)!, obj: found.obj };
  }

  /** Dependents of an owner uid. */
  dependentsOf(uid: string): TypedObj[] {
    return this.objects
      .dependentsOf(uid)
      .map(({ kind, obj }) => ({ type: this.registry.ofKind(kind)!, obj }));
  }

  /** Every namespaced object in a namespace. */
  contentsOf(namespace: string): TypedObj[] {
    const out: TypedObj[] = [];
    for (const { kind, object } of this.objects.all()) {
      const type = this.registry.ofKind(kind)!;
      if (type.namespaced && object.metadata.namespace === namespace)
        out.push({ type, obj: object as StoredObj });
    }
    return out;
  }

  /** uids of objects whose deletion is in progress or that have owners (recovery after restart). */
  deletingUids(): string[] {
    const out: string[] = [];
    for (const { obj: o } of this.objects.entries()) {
      if (o.metadata.deletionTimestamp || o.metadata.ownerReferences?.length) out.push(o.metadata.uid);
    }
    return out;
  }

  /** Whether any namespaced object is in `ns` (a terminating namespace waits for none). */
  namespaceHasContent(ns: string): boolean {
    for (const { kind, obj } of this.objects.entries()) {
      if (this.registry.ofKind(kind)?.namespaced && obj.metadata.namespace === ns) return true;
    }
    return false;
  }
}
