/**
 * Small adapters virt-controller wires its informers and reconcilers with: owner lookups,
 * informer-backed listers and the key-reconciler bridge.
 */
import type { Informer } from '../runtime/informer';
import type { Reconciler } from '../runtime/reconciler';
import type { KubeObject, OwnerReference } from '../runtime/types';
import type { KeyReconciler, Lister } from './controller-ports';

/** The controlling owner reference of `obj`. */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller);
}

/** `namespace/name` of the controlling owner of `obj` when it is a `kind`. */
export function ownerKey(obj: KubeObject, kind: string): string | undefined {
  const ref = controllerOf(obj);
  if (!ref || ref.kind !== kind) return undefined;
  return `${obj.metadata?.namespace}/${ref.name}`;
}

/** A lister over an informer's cache. */
export function lister<T>(inf: Informer<KubeObject>): Lister<T> {
  return {
    get: (key) => inf.indexer.get(key) as T | undefined,
    list: (ns) => (ns ? inf.indexer.byIndex('namespace', ns) : inf.indexer.list()) as T[],
  };
}

/** Adapts a key reconciler to the runtime's Reconciler. */
export function asReconciler(r: KeyReconciler): Reconciler {
  return {
    reconcile: async (req) =>
      (await r.reconcile(req.namespace ? `${req.namespace}/${req.name}` : req.name)) ?? undefined,
  };
}
