/**
 * An error with an HTTP status, answered as a Kubernetes `Status` object (what kubectl
 * and virtctl print the message of).
 */
import type { OutgoingHttpHeaders } from 'node:http';

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  408: 'Timeout',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  501: 'NotImplemented',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
};

/** The `details` of a Status (the object an error is about). */
export interface StatusDetails {
  name: string;
  group: string;
  kind: string;
}

/** An error answered with `code`. */
export class HttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }
}

/**
 * A 409 worded as upstream's (Kubernetes' errors.NewConflict on `kubevirt.io`), which
 * virtctl prints and scripts match on: `Operation cannot be fulfilled on
 * virtualmachine.kubevirt.io "NAME": VM is not running`.
 */
export function conflict(
  resource: 'virtualmachine' | 'virtualmachineinstance',
  name: string,
  why: string,
): HttpError {
  return new HttpError(409, `Operation cannot be fulfilled on ${resource}.kubevirt.io "${name}": ${why}`, {
    name,
    group: 'kubevirt.io',
    kind: resource,
  });
}

/** A 404 worded as upstream's (errors.NewNotFound): `virtualmachine.kubevirt.io "NAME" not found`. */
export function notFound(resource: 'virtualmachine' | 'virtualmachineinstance', name: string): HttpError {
  return new HttpError(404, `${resource}.kubevirt.io "${name}" not found`, {
    name,
    group: 'kubevirt.io',
    kind: resource,
  });
}

/** A non-JSON answer of a subresource (the screenshot's PNG), or one with another code than 200. */
export class RawResponse {
  constructor(
    readonly contentType: string,
    readonly body: Buffer,
    readonly code = 200,
  ) {}
}

/** The Status body of an error. */
export function statusBody(code: number, message: string, details?: StatusDetails): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: REASONS[code] ?? '',
    ...(details ? { details } : {}),
    code,
  };
}

/** What answering needs of a response: node:http's and node:http2's compatibility one both are. */
export interface JsonResponse {
  writeHead(code: number, headers: OutgoingHttpHeaders): unknown;
  end(body: string): unknown;
}

/** Writes JSON with a status code. */
export function sendJson(res: JsonResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Writes an error as a Status (unknown errors are 500s). */
export function sendError(res: JsonResponse, e: unknown): void {
  const code = e instanceof HttpError ? e.code : 500;
  const details = e instanceof HttpError ? e.details : undefined;
  sendJson(res, code, statusBody(code, e instanceof Error ? e.message : String(e), details));
}
