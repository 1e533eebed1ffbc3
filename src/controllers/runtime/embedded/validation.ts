/** Object-metadata validation of the embedded store, worded as the API server words it. */
import type { StatusCause } from '../errors';
import type { KubeObject, ResourceType } from '../types';

const subdomainRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dnsLabelRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const labelKeyRe = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const labelValueRe = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

const subdomainMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const labelMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

/** A value as it is quoted in an error: JSON, cut to 128 characters (a 1 MiB name is not echoed back). */
export function quoteValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 128 ? `${text.slice(0, 128)}... (${text.length - 128} more characters)` : text;
}

function cause(field: string, value: unknown, message: string): StatusCause {
  return {
    reason: 'FieldValueInvalid',
    field,
    message: `Invalid value: ${quoteValue(value)}: ${message}`,
  };
}

function typeCause(field: string, value: unknown, want: string): StatusCause {
  const got = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  return { reason: 'FieldValueTypeInvalid', field, message: `Invalid value: ${got}: must be ${want}` };
}

function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Type errors of `metadata` itself and of the fields the store keys objects by (name,
 * generateName, namespace, resourceVersion, uid): checked before the store reads them.
 */
export function metadataShapeCauses(obj: KubeObject): StatusCause[] {
  const m = (obj.metadata ?? {}) as Record<string, unknown>;
  if (!isMap(m)) return [typeCause('metadata', m, 'an object')];
  const causes: StatusCause[] = [];
  for (const f of ['name', 'generateName', 'namespace', 'resourceVersion', 'uid'] as const) {
    if (m[f] !== undefined && typeof m[f] !== 'string')
      causes.push(typeCause(`metadata.${f}`, m[f], 'a string'));
  }
  return causes;
}

/** Most bytes of all annotations of one object, keys and values (upstream TotalAnnotationSizeLimitB). */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

/**
 * Field errors of `metadata` (name, namespace, labels, annotations, finalizers,
 * ownerReferences). Wrong JSON types are field errors too: a request body is untyped.
 */
export function validateMetadata(type: ResourceType, obj: KubeObject): StatusCause[] {
  const causes = metadataShapeCauses(obj);
  if (causes.length) return causes;
  const m = (obj.metadata ?? {}) as Record<string, unknown>;
  const name = (m.name as string | undefined) ?? '';
  const namespace = m.namespace as string | undefined;
  if (!name) {
    causes.push({
      reason: 'FieldValueRequired',
      field: 'metadata.name',
      message: 'Required value: name or generateName is required',
    });
  } else if (
    type.kind === 'Namespace'
      ? !dnsLabelRe.test(name) || name.length > 63
      : !subdomainRe.test(name) || name.length > 253
  ) {
    causes.push(cause('metadata.name', name, type.kind === 'Namespace' ? labelMsg : subdomainMsg));
  }
  if (type.namespaced && namespace && (!dnsLabelRe.test(namespace) || namespace.length > 63)) {
    causes.push(cause('metadata.namespace', namespace, labelMsg));
  }
  if (m.labels !== undefined && !isMap(m.labels))
    causes.push(typeCause('metadata.labels', m.labels, 'an object'));
  else {
    for (const [k, v] of Object.entries(m.labels ?? {})) {
      if (!labelKeyRe.test(k) || k.length > 316) {
        causes.push(
          cause(`metadata.labels`, k, "name part must consist of alphanumeric characters, '-', '_' or '.'"),
        );
      }
      if (typeof v !== 'string') causes.push(typeCause(`metadata.labels[${k}]`, v, 'a string'));
      else if (!labelValueRe.test(v) || v.length > 63) {
        causes.push(
          cause(
            `metadata.labels`,
            v,
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
          ),
        );
      }
    }
  }
  if (m.annotations !== undefined && !isMap(m.annotations)) {
    causes.push(typeCause('metadata.annotations', m.annotations, 'an object'));
  } else {
    let size = 0;
    for (const [k, v] of Object.entries(m.annotations ?? {})) {
      if (typeof v !== 'string') causes.push(typeCause(`metadata.annotations[${k}]`, v, 'a string'));
      else size += Buffer.byteLength(k) + Buffer.byteLength(v);
    }
    if (size > MAX_ANNOTATIONS_BYTES) {
      causes.push({
        reason: 'FieldValueTooLong',
        field: 'metadata.annotations',
        message: `Too long: may not be more than ${MAX_ANNOTATIONS_BYTES} bytes`,
      });
    }
  }
  if (m.finalizers !== undefined && !Array.isArray(m.finalizers)) {
    causes.push(typeCause('metadata.finalizers', m.finalizers, 'an array'));
  } else {
    for (const [i, f] of ((m.finalizers as unknown[]) ?? []).entries()) {
      if (typeof f !== 'string' || !labelKeyRe.test(f))
        causes.push(cause(`metadata.finalizers[${i}]`, f, 'must be a qualified name'));
    }
  }
  if (m.ownerReferences !== undefined && !Array.isArray(m.ownerReferences)) {
    causes.push(typeCause('metadata.ownerReferences', m.ownerReferences, 'an array'));
    return causes;
  }
  const refs = (m.ownerReferences as unknown[] | undefined) ?? [];
  for (const [i, ref] of refs.entries()) {
    if (!isMap(ref)) {
      causes.push(typeCause(`metadata.ownerReferences[${i}]`, ref, 'an object'));
      continue;
    }
    for (const f of ['apiVersion', 'kind', 'name', 'uid'] as const) {
      if (ref[f] === undefined || ref[f] === '') {
        causes.push({
          reason: 'FieldValueRequired',
          field: `metadata.ownerReferences[${i}].${f}`,
          message: 'Required value',
        });
      } else if (typeof ref[f] !== 'string') {
        causes.push(typeCause(`metadata.ownerReferences[${i}].${f}`, ref[f], 'a string'));
      }
    }
    for (const f of ['controller', 'blockOwnerDeletion'] as const) {
      if (ref[f] !== undefined && typeof ref[f] !== 'boolean')
        causes.push(typeCause(`metadata.ownerReferences[${i}].${f}`, ref[f], 'a boolean'));
    }
  }
  if (refs.filter((r) => isMap(r) && r.controller === true).length > 1) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.ownerReferences',
      message: 'Invalid value: only one reference can have Controller set to true',
    });
  }
  return causes;
}

/**
 * Why a name may not appear as one segment of a REST path (upstream's
 * IsValidPathSegmentName): `.` and `..` would be resolved into the parent path, `/` and `%`
 * would split or re-encode it.
 */
export function pathSegmentProblem(seg: string): string | undefined {
  if (seg === '.' || seg === '..') return 'may not be "." or ".."';
  if (seg.includes('/')) return 'may not contain "/"';
  if (seg.includes('%')) return 'may not contain "%"';
  return undefined;
}
