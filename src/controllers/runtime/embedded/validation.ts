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

function cause(field: string, value: unknown, message: string): StatusCause {
  return {
    reason: 'FieldValueInvalid',
    field,
    message: `Invalid value: ${JSON.stringify(value)}: ${message}`,
  };
}

/** Field errors of `metadata` (name, namespace, labels, annotations, finalizers, ownerReferences). */
export function validateMetadata(type: ResourceType, obj: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const m = obj.metadata ?? {};
  const name = m.name ?? '';
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
  if (type.namespaced && m.namespace && (!dnsLabelRe.test(m.namespace) || m.namespace.length > 63)) {
    causes.push(cause('metadata.namespace', m.namespace, labelMsg));
  }
  for (const [k, v] of Object.entries(m.labels ?? {})) {
    if (!labelKeyRe.test(k) || k.length > 316) {
      causes.push(
        cause(`metadata.labels`, k, "name part must consist of alphanumeric characters, '-', '_' or '.'"),
      );
    }
    if (typeof v !== 'string' || !labelValueRe.test(v) || v.length > 63) {
      causes.push(
        cause(
          `metadata.labels`,
          v,
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        ),
      );
    }
  }
  for (const [k, v] of Object.entries(m.annotations ?? {})) {
    if (typeof v !== 'string') causes.push(cause(`metadata.annotations[${k}]`, v, 'must be a string'));
  }
  for (const [i, f] of (m.finalizers ?? []).entries()) {
    if (typeof f !== 'string' || !labelKeyRe.test(f))
      causes.push(cause(`metadata.finalizers[${i}]`, f, 'must be a qualified name'));
  }
  for (const [i, ref] of (m.ownerReferences ?? []).entries()) {
    for (const f of ['apiVersion', 'kind', 'name', 'uid'] as const) {
      if (!ref?.[f]) {
        causes.push({
          reason: 'FieldValueRequired',
          field: `metadata.ownerReferences[${i}].${f}`,
          message: 'Required value',
        });
      }
    }
  }
  if ((m.ownerReferences ?? []).filter((r) => r.controller).length > 1) {
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
