/**
 * What the virt-controller's reconcilers need from the reconcile primitives: read-only
 * caches, a way to requeue, an event recorder and create/delete expectations. Small on
 * purpose so the runtime's informers, work queue and recorder satisfy them directly.
 */
import type { ObjectClient } from '../runtime/types';

/** A read-only view of an informer cache. */
export interface Lister<T> {
  /** The object under `namespace/name`, if cached. */
  get(key: string): T | undefined;
  /** All cached objects, optionally of one namespace. */
  list(namespace?: string): T[];
}

/** Launcher pods by the uid of the VMI that created them (label kubevirt.io/created-by). */
export interface PodsByVmi<P> {
  byVmiUid(uid: string): P[];
}

/** The object an Event is about (any kubevirt.io or core object). */
export interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

/** Records core/v1 Events on objects. */
export interface EventRecorder {
  event(object: EventSubject, type: 'Normal' | 'Warning', reason: string, message: string): void;
}

/**
 * Create/delete expectations per controller key (upstream's ControllerExpectations): a
 * key whose own writes are not yet seen by the informer is not acted upon again. The
 * runtime's `Expectations` class has this shape.
 */
export interface Expectations {
  expectCreations(key: string, n: number): void;
  expectDeletions(key: string, n: number): void;
  creationObserved(key: string): void;
  deletionObserved(key: string): void;
  satisfied(key: string): boolean;
  pending(key: string): { add: number; del: number } | undefined;
  delete(key: string): void;
}

/** What a reconcile asks of the queue afterwards. */
export interface ReconcileResult {
  /** Reconcile this key again after so many milliseconds. */
  requeueAfterMs?: number;
}

/** A reconciler of one kind, keyed by `namespace/name`. */
export interface KeyReconciler {
  reconcile(key: string): Promise<ReconcileResult | undefined>;
}

/** The shared dependencies of the virt-controller's reconcilers. */
export interface ControllerDeps {
  client: ObjectClient;
  recorder: EventRecorder;
  /** Clock, for tests; defaults to `new Date()`. */
  now?: () => Date;
}

/** RFC 3339 without fractional seconds, as the API server writes timestamps. */
export function timestamp(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}
