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

/** An error answered with `code`. */
export class HttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A non-JSON answer of a subresource (the screenshot's PNG). */
export class RawResponse {
  constructor(
    readonly contentType: string,
    readonly body: Buffer,
  ) {}
}

/** The Status body of an error. */
export function statusBody(code: number, message: string): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: REASONS[code] ?? '',
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
  sendJson(res, code, statusBody(code, e instanceof Error ? e.message : String(e)));
}
