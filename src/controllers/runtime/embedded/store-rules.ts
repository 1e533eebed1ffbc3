/** Object rules of the embedded store: storage keys, generation, the size bound, CRD names, apply merge. */
import { ApiError, type StatusCause } from '../errors';
import { apiVersionOf } from '../resources';
import type { KubeObject, ResourceType } from '../types';
import type { JournalRecord } from './journal';
import type { StoredObj } from './store-types';

/** The storage key of a kind: `group/plural` (versions share storage). */
export function storageKind(type: ResourceType): string {
  return `${type.group}/${type.plural}`;
}

/** Now, as Kubernetes writes timestamps (seconds, UTC). */
export function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Everything of an object but metadata (and status when it is a subresource): what bumps generation. */
export function specPart(obj: Record<string, unknown>, type: ResourceType): Record<string, unknown> {
  const { metadata: _m, apiVersion: _a, kind: _k, ...rest } = obj;
  if (type.statusSubresource) delete rest.status;
  return rest;
}

/**
 * The largest stored object (its serialized JSON), as etcd's default request limit
 * (1.5 MiB) bounds an object on a cluster.
 */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;

/** One journal line; 413 for an object over `MAX_OBJECT_BYTES`. */
export function serializeRecord(type: ResourceType, rec: JournalRecord & { op: 'put' }): string {
  let line: string;
  try {
    line = JSON.stringify(rec);
  } catch (err) {
    throw new ApiError(
      413,
      'RequestEntityTooLarge',
      `${type.kind} "${rec.object.metadata.name}": ${(err as Error).message}`,
    );
  }
  const bytes = Buffer.byteLength(line);
  if (bytes > MAX_OBJECT_BYTES) {
    throw new ApiError(
      413,
      'RequestEntityTooLarge',
      `${type.kind} "${rec.object.metadata.name}" is too large: ${bytes} bytes serialized, the limit is ${MAX_OBJECT_BYTES}`,
    );
  }
  return line;
}

/** The API server's rules for a CRD's name and group: `<plural>.<group>`, a group with a dot. */
export function crdNameCauses(obj: StoredObj, t: ResourceType): StatusCause[] {
  const causes: StatusCause[] = [];
  if (obj.metadata.name !== `${t.plural}.${t.group}`) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.name',
      message: `Invalid value: must be spec.names.plural+"."+spec.group (${t.plural}.${t.group})`,
    });
  }
  if (!t.group.includes('.')) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'spec.group',
      message: 'Invalid value: should be a domain with at least one dot',
    });
  }
  return causes;
}

/** The key of an object within its kind: `namespace/name`. */
export function keyOfObj(obj: StoredObj): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

/**
 * The simplified server-side apply of the embedded store: maps merge recursively, lists
 * and scalars in the applied configuration replace the live ones. Field ownership is not
 * tracked, so fields a manager stops applying are kept rather than removed.
 */
export function applyMerge(live: unknown, applied: unknown): unknown {
  if (applied === null || typeof applied !== 'object' || Array.isArray(applied))
    return structuredClone(applied);
  const out: Record<string, unknown> =
    live && typeof live === 'object' && !Array.isArray(live) ? { ...(live as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(applied)) out[k] = applyMerge(out[k], v);
  return out;
}

/**
 * Marks a call from the store's REST server (./server), which serializes what it gets in the
 * same turn and never keeps or changes it: the body it passes is handed over (not copied
 * again: it was just parsed), and objects come back as read-only views of the stored ones
 * instead of deep copies. At 10,000 VMs the copies were the store's largest CPU cost.
 */
export const SERVING: unique symbol = Symbol('embedded-store serving');

/** Options of a call from the REST server: see {@link SERVING}. */
export interface Served {
  [SERVING]?: true;
}

/**
 * A stored object for a caller, in `type`'s apiVersion and kind: a deep copy (the store's own
 * copy is never handed out), or for `view` (the REST server, see {@link SERVING}) a shallow
 * one sharing the stored object's parts, to be serialized and dropped, never changed.
 */
export function copyOut(type: ResourceType, obj: KubeObject, view = false): KubeObject {
  const o = view ? { ...obj } : structuredClone(obj);
  o.apiVersion = apiVersionOf(type);
  o.kind = type.kind;
  return o;
}
