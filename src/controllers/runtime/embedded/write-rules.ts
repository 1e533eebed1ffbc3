/**
 * How a write to the embedded store turns the stored object into the next one, as the API
 * server does it: the body's kind and apiVersion, preconditions (409 Conflict), the three
 * patch types, the finalizers a deletion policy sets, and an update's server-owned
 * metadata, status subresource and generation. Pure functions; the store applies them.
 */
import { randomUUID } from 'node:crypto';
import { badRequest, conflict, ForbiddenError, invalid, notFound } from '../errors';
import { jsonEqual, jsonPatch, mergePatch } from '../patch';
import { apiVersionOf } from '../resources';
import type {
  DeleteOptions,
  JsonPatchOp,
  KubeObject,
  ObjectMeta,
  PatchOptions,
  ResourceType,
} from '../types';
import { applyMerge, now, specPart } from './store-rules';
import type { StoredObj } from './store-types';
import { metadataShapeCauses, validateMetadata } from './validation';

const FOREGROUND = 'foregroundDeletion';
const ORPHAN = 'orphan';
const MODIFIED =
  'the object has been modified; please apply your changes to the latest version and try again';

/** 400 unless `obj` is a JSON object of `type`'s kind and apiVersion (when it names them). */
export function checkBody(type: ResourceType, obj: Record<string, unknown>): void {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw badRequest(`the ${type.kind} must be a JSON object`);
  }
  const shape = metadataShapeCauses(obj as KubeObject);
  if (shape.length) throw invalid(type.kind, '', shape);
  if (obj.kind !== undefined && obj.kind !== type.kind) {
    throw badRequest(
      `the kind of the object (${String(obj.kind)}) does not match the resource (${type.kind})`,
    );
  }
  if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(type)) {
    throw badRequest(
      `the apiVersion of the object (${String(obj.apiVersion)}) does not match the resource (${apiVersionOf(type)})`,
    );
  }
}

/** The namespace a request on `type` names: none for a cluster-scoped kind; 400 when a namespaced one lacks it. */
export function namespaceOf(type: ResourceType, namespace: string | undefined): string | undefined {
  if (!type.namespaced) return undefined;
  if (!namespace) throw badRequest(`${type.kind} is namespaced: a namespace is required`);
  return namespace;
}

/** 404 when namespace `ns` (stored as `nsObj`) does not exist, 403 when it is terminating. */
export function checkNamespaceOpen(ns: string, nsObj: StoredObj | undefined): void {
  if (!nsObj) throw notFound('', 'namespaces', ns);
  if (nsObj.metadata.deletionTimestamp) {
    throw new ForbiddenError(
      403,
      'Forbidden',
      `unable to create new content in namespace ${ns} because it is being terminated`,
    );
  }
}

/** The name an update's body carries; 422 without one. */
export function requiredName(type: ResourceType, meta: StoredObj['metadata']): string {
  if (!meta.name) {
    throw invalid(type.kind, '', [
      { reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name is required' },
    ]);
  }
  return meta.name;
}

function uidMismatch(uid: string, current: StoredObj): string {
  return `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`;
}

/** 409 when a delete's preconditions (uid, resourceVersion) do not match `current`. */
export function checkDeletePreconditions(
  type: ResourceType,
  name: string,
  current: StoredObj,
  pre: DeleteOptions['preconditions'],
): void {
  if (pre?.uid && pre.uid !== current.metadata.uid) {
    throw conflict(type.group, type.plural, name, uidMismatch(pre.uid, current));
  }
  if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
    throw conflict(
      type.group,
      type.plural,
      name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
    );
  }
}

/**
 * 409 when an update cannot apply to `current`: a patch computed against `expected` that
 * has changed since, or a body whose resourceVersion or uid is not the stored one.
 */
export function checkUpdatePreconditions(
  type: ResourceType,
  name: string,
  current: StoredObj,
  meta: StoredObj['metadata'],
  expected?: StoredObj,
): void {
  if (
    (expected && expected !== current) ||
    (meta.resourceVersion && meta.resourceVersion !== current.metadata.resourceVersion)
  ) {
    throw conflict(type.group, type.plural, name, MODIFIED);
  }
  if (meta.uid && meta.uid !== current.metadata.uid) {
    throw conflict(type.group, type.plural, name, uidMismatch(meta.uid, current));
  }
}

/** The object of an apply patch, checked: 422 without a field manager, 400 for a bad body or name. */
export function applyBody(
  type: ResourceType,
  name: string,
  patch: unknown,
  options: PatchOptions,
): KubeObject {
  if (!options.fieldManager) {
    throw invalid('PatchOptions', '', [
      {
        reason: 'FieldValueRequired',
        field: 'fieldManager',
        message: 'Required value: is required for apply patch',
      },
    ]);
  }
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    throw badRequest('an apply patch must be an object');
  }
  const body = patch as KubeObject;
  const shape = metadataShapeCauses(body);
  if (shape.length) throw invalid(type.kind, name, shape);
  if (body.metadata?.name && body.metadata.name !== name) {
    throw badRequest(
      `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`,
    );
  }
  return body;
}

/** `base` with `patch` applied as `patchType` says (merge, apply or JSON patch). */
export function patched(base: KubeObject, patch: unknown, patchType: PatchOptions['type']): KubeObject {
  switch (patchType) {
    case 'merge':
      if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
        throw badRequest('a merge patch must be a JSON object');
      }
      return mergePatch(base, patch) as KubeObject;
    case 'apply':
      return applyMerge(base, patch) as KubeObject;
    case 'json':
      return jsonPatch(base, patch as JsonPatchOp[]) as KubeObject;
    default:
      throw badRequest(`unsupported patch type "${patchType as string}"`);
  }
}

/** The finalizers `current` has once deleted with `policy` (foreground and orphan are finalizers). */
export function deletionFinalizers(
  current: StoredObj,
  policy: DeleteOptions['propagationPolicy'],
): Set<string> {
  const finalizers = new Set(current.metadata.finalizers ?? []);
  if (policy === 'Foreground') {
    finalizers.delete(ORPHAN);
    finalizers.add(FOREGROUND);
  } else if (policy === 'Orphan') {
    finalizers.delete(FOREGROUND);
    finalizers.add(ORPHAN);
  } else if (policy === 'Background') {
    finalizers.delete(FOREGROUND);
    finalizers.delete(ORPHAN);
  }
  return finalizers;
}

/** Sets the metadata the server owns on an object being created (uid, timestamps, generation 1). */
export function stampCreated(type: ResourceType, obj: StoredObj): void {
  const meta = obj.metadata;
  meta.uid = randomUUID();
  meta.creationTimestamp = now();
  meta.generation = 1;
  delete meta.deletionTimestamp;
  delete (meta as ObjectMeta).resourceVersion;
  if (type.statusSubresource && type.kind !== 'CustomResourceDefinition') delete obj.status;
}

/**
 * `obj` (a copy of the stored object) marked as deleting with `finalizers`: the first time,
 * deletionTimestamp is set, generation bumped and a namespace with content Terminating.
 */
export function markDeleting(
  obj: StoredObj,
  finalizers: Set<string>,
  terminatingNamespace: boolean,
): StoredObj {
  if (!obj.metadata.deletionTimestamp) {
    obj.metadata.deletionTimestamp = now();
    obj.metadata.deletionGracePeriodSeconds = 0;
    obj.metadata.generation = (obj.metadata.generation ?? 0) + 1;
    if (terminatingNamespace) obj.status = { ...(obj.status as object), phase: 'Terminating' };
  }
  obj.metadata.finalizers = [...finalizers];
  if (obj.metadata.finalizers.length === 0) delete obj.metadata.finalizers;
  return obj;
}

/**
 * The object an update (`status` false: everything but status, for kinds with a status
 * subresource) or a status update (`status` true: only status) of `current` with `input`
 * stores; server-owned metadata stays as stored and generation is bumped on a spec change.
 * 422 for bad metadata. apiVersion, kind and resourceVersion are set by the caller.
 */
export function updatedObject(
  type: ResourceType,
  current: StoredObj,
  input: StoredObj,
  status: boolean,
): StoredObj {
  if (status) {
    const next = { ...structuredClone(current), status: input.status };
    if (input.status === undefined) delete next.status;
    return next;
  }
  const next = input;
  if (type.statusSubresource) {
    if (current.status === undefined) delete next.status;
    else next.status = structuredClone(current.status);
  }
  const causes = validateMetadata(type, next);
  if (causes.length) throw invalid(type.kind, current.metadata.name, causes);
  next.metadata.namespace = current.metadata.namespace;
  if (!type.namespaced) delete next.metadata.namespace;
  next.metadata.uid = current.metadata.uid;
  next.metadata.creationTimestamp = current.metadata.creationTimestamp;
  next.metadata.generation = current.metadata.generation;
  if (current.metadata.deletionTimestamp) {
    next.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
    next.metadata.deletionGracePeriodSeconds = current.metadata.deletionGracePeriodSeconds;
  } else {
    delete next.metadata.deletionTimestamp;
    delete next.metadata.deletionGracePeriodSeconds;
  }
  if (!jsonEqual(specPart(current, type), specPart(next, type))) {
    next.metadata.generation = (current.metadata.generation ?? 0) + 1;
  }
  return next;
}
