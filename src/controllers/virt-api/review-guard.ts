/**
 * What every webhook checks of an AdmissionReview before it defaults or validates: that the
 * objects are nested within MAX_OBJECT_DEPTH (defaulting, validation and the patch diff
 * recurse: 10,000 levels overflowed the stack and the API server got a 500 instead of an
 * answer), and that the request names the kind the webhook serves, its group and resource,
 * and an object of that kind (validation dispatched on `object.kind`, so a VMI request
 * carrying `kind: KubeVirt` was validated as a KubeVirt).
 */
import type { FieldError } from '../../api/errors';
import { findKind } from '../../api/groups';
import { MAX_OBJECT_DEPTH, nestedDeeperThan } from '../../api/json-bounds';
import type { AdmissionRequest } from './admission-review';

const invalid = (path: string, message: string): FieldError[] => [
  { path, message, type: 'FieldValueInvalid' },
];

/** Refusals for objects nested past MAX_OBJECT_DEPTH (measured without recursion). */
export function depthErrors(req: AdmissionRequest): FieldError[] {
  const tooDeep = [req.object, req.oldObject].some((o) => o !== undefined && nestedDeeperThan(o));
  return tooDeep
    ? invalid('request', `the AdmissionReview is nested more than ${MAX_OBJECT_DEPTH} levels deep`)
    : [];
}

/**
 * Refusals unless the request is for one of `kinds` in its own group and resource, and its
 * objects (when they say) are of that kind: what is validated is what the request names.
 */
export function kindErrors(req: AdmissionRequest, kinds: readonly string[]): FieldError[] {
  const kind = req.kind.kind;
  if (!kinds.includes(kind))
    return invalid('kind', `expected ${kinds.join(' or ')}, got ${JSON.stringify(kind)}`);
  const info = findKind(req.kind.group, kind);
  if (!info) return invalid('kind', `${kind} is not served in group ${JSON.stringify(req.kind.group)}`);
  const { group, resource } = req.resource;
  if (group !== info.group || resource !== info.plural) {
    return invalid(
      'resource',
      `expected ${info.group} ${info.plural} for kind ${kind}, got ${group} ${resource}`.slice(0, 300),
    );
  }
  for (const o of [req.object, req.oldObject]) {
    if (o && o.kind !== undefined && o.kind !== kind) {
      return invalid(
        'kind',
        `the object's kind ${JSON.stringify(o.kind).slice(0, 100)} is not the request's kind ${JSON.stringify(kind)}`,
      );
    }
  }
  return [];
}
