/**
 * The `admission.k8s.io/v1` AdmissionReview wire format: parsing what the API server
 * sends (checked strictly: a webhook that admits what it could not read defeats its
 * purpose) and building the answer, with upstream's refusal shape (a Status of reason
 * Invalid, code 422, whose `details.causes` carry each field path).
 */
import type { FieldError } from '../../api/errors';
import type { JsonPatchOperation } from './json-patch';

/** Largest AdmissionReview accepted: an object and its old version at etcd's 1.5 MiB each, with room. */
export const MAX_REVIEW_BYTES = 8 * 1024 * 1024;

/** The fields of `request` the webhooks use. */
export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  object?: Record<string, unknown>;
  oldObject?: Record<string, unknown>;
  dryRun?: boolean;
}

/** One `metav1.StatusCause` as it is on the wire (Go's `Type` field is JSON `reason`). */
export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/** An AdmissionReview that cannot be read: answered with HTTP 400 and this message. */
export class BadReviewError extends Error {}

const OPERATIONS = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function gvk(v: unknown, what: string, third: 'kind' | 'resource'): Record<string, string> {
  if (!isObject(v)) throw new BadReviewError(`request.${what}: an object is required`);
  for (const k of ['group', 'version', third]) {
    if (typeof v[k] !== 'string') throw new BadReviewError(`request.${what}.${k}: a string is required`);
  }
  return v as Record<string, string>;
}

/** Parses an AdmissionReview body; throws {@link BadReviewError} naming the first problem. */
export function parseAdmissionReview(body: Buffer): AdmissionRequest {
  if (body.length > MAX_REVIEW_BYTES) {
    throw new BadReviewError(`AdmissionReview of ${body.length} bytes exceeds ${MAX_REVIEW_BYTES}`);
  }
  let review: unknown;
  try {
    review = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new BadReviewError(`AdmissionReview is not JSON: ${(e as Error).message}`);
  }
  if (!isObject(review)) throw new BadReviewError('AdmissionReview: an object is required');
  if (review.apiVersion !== 'admission.k8s.io/v1' || review.kind !== 'AdmissionReview') {
    throw new BadReviewError(
      `apiVersion/kind: expected admission.k8s.io/v1 AdmissionReview, got ${JSON.stringify(`${review.apiVersion}/${review.kind}`).slice(0, 120)}`,
    );
  }
  const r = review.request;
  if (!isObject(r)) throw new BadReviewError('request: an object is required');
  if (typeof r.uid !== 'string' || r.uid === '') throw new BadReviewError('request.uid: required');
  if (typeof r.operation !== 'string' || !OPERATIONS.has(r.operation)) {
    throw new BadReviewError(
      `request.operation: ${JSON.stringify(r.operation)} is not CREATE, UPDATE, DELETE or CONNECT`,
    );
  }
  gvk(r.kind, 'kind', 'kind');
  gvk(r.resource, 'resource', 'resource');
  if (r.userInfo !== undefined && !isObject(r.userInfo))
    throw new BadReviewError('request.userInfo: an object is required');
  for (const k of ['object', 'oldObject'] as const) {
    if (r[k] !== undefined && r[k] !== null && !isObject(r[k])) {
      throw new BadReviewError(`request.${k}: an object is required`);
    }
  }
  if ((r.operation === 'CREATE' || r.operation === 'UPDATE') && !isObject(r.object)) {
    throw new BadReviewError(`request.object: required for ${r.operation}`);
  }
  if (r.operation === 'UPDATE' && !isObject(r.oldObject)) {
    throw new BadReviewError('request.oldObject: required for UPDATE');
  }
  return {
    ...(r as unknown as AdmissionRequest),
    userInfo: (r.userInfo as AdmissionRequest['userInfo']) ?? {},
    object: (r.object ?? undefined) as Record<string, unknown> | undefined,
    oldObject: (r.oldObject ?? undefined) as Record<string, unknown> | undefined,
  };
}

/** Field errors as upstream's StatusCauses (reason, message, field). */
export function toCauses(errors: readonly FieldError[]): StatusCause[] {
  return errors.map((e) => ({ reason: e.type ?? 'FieldValueInvalid', message: e.message, field: e.path }));
}

/** The AdmissionReview answering `uid`: allowed (with an optional patch) or refused with causes. */
export function admissionResponse(
  uid: string,
  outcome:
    | { allowed: true; patch?: JsonPatchOperation[]; warnings?: string[] }
    | { allowed: false; causes: StatusCause[]; code?: number; message?: string },
): Record<string, unknown> {
  const response: Record<string, unknown> = { uid, allowed: outcome.allowed };
  if (outcome.allowed) {
    if (outcome.patch && outcome.patch.length > 0) {
      response.patchType = 'JSONPatch';
      response.patch = Buffer.from(JSON.stringify(outcome.patch)).toString('base64');
    }
    if (outcome.warnings?.length) response.warnings = outcome.warnings;
  } else if (outcome.code !== undefined) {
    // A refusal that is not about fields (the eviction webhook's 429, as upstream's).
    response.status = {
      metadata: {},
      status: 'Failure',
      message: outcome.message ?? '',
      reason: outcome.code === 429 ? 'TooManyRequests' : 'Forbidden',
      code: outcome.code,
    };
  } else {
    // kubectl prints the message after "denied the request:": name each field in it.
    const message = outcome.causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message)).join(', ');
    response.status = {
      metadata: {},
      status: 'Failure',
      message,
      reason: 'Invalid',
      code: 422,
      details: { causes: outcome.causes },
    };
  }
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}
