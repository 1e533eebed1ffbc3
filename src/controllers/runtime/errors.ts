/**
 * Typed API errors, mirroring the Kubernetes `Status` object (reason, code, details.causes)
 * so callers branch on the class and not on HTTP codes or message text.
 */

/** One `status.details.causes[]` entry: which field and why. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** The Kubernetes `Status` object returned for failed requests. */
export interface Status {
  apiVersion?: string;
  kind?: 'Status';
  status?: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; group?: string; kind?: string; uid?: string; causes?: StatusCause[] };
}

/** Any error returned by the API; `reason` is the Kubernetes StatusReason. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly causes: StatusCause[];
  readonly details: Status['details'];

  constructor(code: number, reason: string, message: string, details?: Status['details']) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.reason = reason;
    this.details = details;
    this.causes = details?.causes ?? [];
  }

  /** This error as a Kubernetes `Status` object (what a server sends back). */
  toStatus(): Status {
    return {
      apiVersion: 'v1',
      kind: 'Status',
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
      details: this.details,
    };
  }
}

/** 404 NotFound: the object (or its kind) does not exist. */
export class NotFoundError extends ApiError {}
/** 409 Conflict: resourceVersion/uid precondition failed; re-read and retry. */
export class ConflictError extends ApiError {}
/** 409 AlreadyExists: an object of that name already exists. */
export class AlreadyExistsError extends ApiError {}
/** 422 Invalid: the object failed validation; `causes` name the fields. */
export class InvalidError extends ApiError {}
/** 410 Gone (Expired): the resourceVersion was compacted; relist. */
export class GoneError extends ApiError {}
/** 400 BadRequest: malformed request. */
export class BadRequestError extends ApiError {}
/** 403 Forbidden. */
export class ForbiddenError extends ApiError {}
/** 429 TooManyRequests: back off and retry. */
export class TooManyRequestsError extends ApiError {}

type Ctor = new (code: number, reason: string, message: string, details?: Status['details']) => ApiError;

const byReason: Record<string, Ctor> = {
  NotFound: NotFoundError,
  Conflict: ConflictError,
  AlreadyExists: AlreadyExistsError,
  Invalid: InvalidError,
  Gone: GoneError,
  Expired: GoneError,
  BadRequest: BadRequestError,
  Forbidden: ForbiddenError,
  TooManyRequests: TooManyRequestsError,
};

const byCode: Record<number, Ctor> = {
  400: BadRequestError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  410: GoneError,
  422: InvalidError,
  429: TooManyRequestsError,
};

/** Builds the typed error for a `Status` (reason first, then HTTP code). */
export function errorFromStatus(status: Status, httpCode?: number): ApiError {
  const code = status.code ?? httpCode ?? 500;
  const reason = status.reason ?? '';
  const Cls = byReason[reason] ?? byCode[code] ?? ApiError;
  return new Cls(
    code,
    reason || 'Unknown',
    status.message ?? `request failed with HTTP ${code}`,
    status.details,
  );
}

function resourceName(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural;
}

/** `<plural>.<group> "<name>" not found`, as the API server words it. */
export function notFound(group: string, plural: string, name: string): NotFoundError {
  return new NotFoundError(404, 'NotFound', `${resourceName(group, plural)} "${name}" not found`, {
    name,
    group,
    kind: plural,
  });
}

/** `<plural>.<group> "<name>" already exists`, as the API server words it (409 AlreadyExists). */
export function alreadyExists(group: string, plural: string, name: string): AlreadyExistsError {
  return new AlreadyExistsError(
    409,
    'AlreadyExists',
    `${resourceName(group, plural)} "${name}" already exists`,
    {
      name,
      group,
      kind: plural,
    },
  );
}

/** `Operation cannot be fulfilled on <plural>.<group> "<name>": <why>`, as the API server words it (409). */
export function conflict(group: string, plural: string, name: string, why: string): ConflictError {
  return new ConflictError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${resourceName(group, plural)} "${name}": ${why}`,
    { name, group, kind: plural },
  );
}

/** 422 with one cause per field error; the message lists `field: message` pairs. */
export function invalid(kind: string, name: string, causes: StatusCause[]): InvalidError {
  const list = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
  return new InvalidError(422, 'Invalid', `${kind} "${name}" is invalid: ${list}`, {
    name,
    kind,
    causes: causes.map((c) => ({ reason: c.reason ?? 'FieldValueInvalid', ...c })),
  });
}

/** 410 Expired: the requested resourceVersion is too old (compacted); the watcher must relist. */
export function gone(message: string): GoneError {
  return new GoneError(410, 'Expired', message);
}

/** 400 BadRequest with `message`. */
export function badRequest(message: string): BadRequestError {
  return new BadRequestError(400, 'BadRequest', message);
}

/** True when `err` is a NotFoundError (an `instanceof` check: the classes of this module copy). */
export function isNotFound(err: unknown): err is NotFoundError {
  return err instanceof NotFoundError;
}
/** True when `err` is a ConflictError. */
export function isConflict(err: unknown): err is ConflictError {
  return err instanceof ConflictError;
}
/** True when `err` is an AlreadyExistsError. */
export function isAlreadyExists(err: unknown): err is AlreadyExistsError {
  return err instanceof AlreadyExistsError;
}
/** True when `err` is a GoneError (410 Gone or Expired). */
export function isGone(err: unknown): err is GoneError {
  return err instanceof GoneError;
}
