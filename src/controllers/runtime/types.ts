/**
 * The generic Kubernetes object shapes the reconcile primitives work with, and the
 * `ObjectClient` port both backends (a real API server, the embedded store) implement.
 * Shapes are structural and loose on purpose: the generated `kubevirt.io/v1` types are
 * assignable to `KubeObject` without this layer importing them.
 */

import type { OwnerReference } from '../../api/generated/types';

/** `metadata.ownerReferences[]` of a Kubernetes object (the API's type). */
export type { OwnerReference };

/** `metadata` of a Kubernetes object (the fields this layer reads or writes). */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | number | Date;
  deletionTimestamp?: string | number | Date;
  deletionGracePeriodSeconds?: number;
  labels?: { [key: string]: string };
  annotations?: { [key: string]: string };
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
}

/** Any Kubernetes object: `apiVersion`, `kind`, `metadata`, and usually `spec`/`status`. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: unknown;
  status?: unknown;
}

/** A list response: `items` plus the collection's resourceVersion to watch from. */
export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion: string; continue?: string };
  items: T[];
}

/**
 * Where a kind lives in the API: group/version, the plural used in REST paths, whether it
 * is namespaced and whether it has a status subresource.
 */
export interface ResourceType {
  /** API group; '' for the core group. */
  group: string;
  version: string;
  kind: string;
  /** Lower-case plural used in REST paths, e.g. `virtualmachines`. */
  plural: string;
  namespaced: boolean;
  /** True when `status` is a subresource: updates ignore it, `updateStatus` changes only it. */
  statusSubresource?: boolean;
}

/** Options of `list` and `watch`. */
export interface ListOptions {
  /** Namespace to look in; omitted means all namespaces (or a cluster-scoped kind). */
  namespace?: string;
  /** Label selector in Kubernetes string syntax, e.g. `app=web,tier in (a,b),!legacy`. */
  labelSelector?: string;
  /** Field selector, e.g. `metadata.name=foo,metadata.namespace!=bar`. */
  fieldSelector?: string;
  /** Page size; `continue` fetches the next page. */
  limit?: number;
  continue?: string;
}

/** Options of `watch`. */
export interface WatchOptions extends ListOptions {
  /**
   * Start after this resourceVersion (events newer than it are replayed). Omitted or '0'
   * means: synthetic ADDED events for every current object, then live changes.
   */
  resourceVersion?: string;
  /** Ask for periodic BOOKMARK events carrying the latest resourceVersion. */
  allowWatchBookmarks?: boolean;
  /** Server-side timeout of the watch, in seconds. */
  timeoutSeconds?: number;
}

/** A watch event's `type`: an object added, modified or deleted, or a BOOKMARK (progress only). */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** One watch event. BOOKMARK events carry only `metadata.resourceVersion`. */
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  object: T;
}

/** A running watch. `closed` resolves when it ends: undefined when stopped or timed out, an error otherwise (a `GoneError` when the resourceVersion was compacted). */
export interface WatchHandle {
  stop(): void;
  readonly closed: Promise<Error | undefined>;
}

/** Options of writes. */
export interface WriteOptions {
  /** Validate and return the result without persisting it. */
  dryRun?: boolean;
  /** Name of the actor making the change (recorded by server-side apply). */
  fieldManager?: string;
}

/** How a patch body is applied: JSON merge patch (RFC 7386), JSON patch (RFC 6902) or server-side apply. */
export type PatchType = 'merge' | 'json' | 'apply';

/** Options of `patch`. */
export interface PatchOptions extends WriteOptions {
  namespace?: string;
  /** `merge` (RFC 7386), `json` (RFC 6902) or `apply` (server-side apply; needs `fieldManager`). */
  type: PatchType;
  /** Patch the status subresource instead of the main resource. */
  subresource?: 'status';
  /** Server-side apply: take ownership of conflicting fields. */
  force?: boolean;
}

/** On delete, what happens to dependents: deleted in the background, first (foreground), or orphaned. */
export type PropagationPolicy = 'Background' | 'Foreground' | 'Orphan';

/** Options of `delete`. */
export interface DeleteOptions {
  namespace?: string;
  /** Delete only if the object still has this uid / resourceVersion, else Conflict. */
  preconditions?: { uid?: string; resourceVersion?: string };
  /** What happens to dependents (objects whose ownerReferences name this one). Default Background. */
  propagationPolicy?: PropagationPolicy;
  gracePeriodSeconds?: number;
  dryRun?: boolean;
}

/** The outcome of `delete`: `pending` when finalizers keep the object (now with deletionTimestamp). */
export interface DeleteResult<T extends KubeObject = KubeObject> {
  pending: boolean;
  /** The object's last state as the server returned it, when it returned one. */
  object?: T;
}

/** A JSON patch operation (RFC 6902). */
export interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

/**
 * The object client port. Every method throws an `ApiError` subclass (`NotFoundError`,
 * `ConflictError`, `AlreadyExistsError`, `InvalidError`, `GoneError`, ...) carrying the
 * API's reason, code and causes.
 */
export interface ObjectClient {
  get<T extends KubeObject>(type: ResourceType, name: string, namespace?: string): Promise<T>;
  list<T extends KubeObject>(type: ResourceType, options?: ListOptions): Promise<KubeList<T>>;
  /** Starts a watch; `onEvent` is called in order, one event at a time. */
  watch<T extends KubeObject>(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (event: WatchEvent<T>) => void,
  ): Promise<WatchHandle>;
  create<T extends KubeObject>(type: ResourceType, object: T, options?: WriteOptions): Promise<T>;
  /** Replaces the object; `metadata.resourceVersion`, when set, must match (else Conflict). */
  update<T extends KubeObject>(type: ResourceType, object: T, options?: WriteOptions): Promise<T>;
  /** Replaces only `status` (status subresource); resourceVersion as for `update`. */
  updateStatus<T extends KubeObject>(type: ResourceType, object: T, options?: WriteOptions): Promise<T>;
  patch<T extends KubeObject>(
    type: ResourceType,
    name: string,
    patch: unknown,
    options: PatchOptions,
  ): Promise<T>;
  delete<T extends KubeObject>(
    type: ResourceType,
    name: string,
    options?: DeleteOptions,
  ): Promise<DeleteResult<T>>;
}
