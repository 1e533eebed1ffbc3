/**
 * Reading a request to the embedded store's REST server (./server): the body (size- and
 * depth-bounded JSON or YAML), integer query parameters, and routing the raw path to a kind,
 * namespace, name and subresource.
 */
import type http from 'node:http';
import { parse as parseYaml } from 'yaml';
import { MAX_OBJECT_DEPTH, nestedDeeperThan } from '../../../api/json-bounds';
import { ApiError, badRequest } from '../errors';
import type { PatchType, ResourceType } from '../types';
import type { EmbeddedStore } from './store';
import { pathSegmentProblem } from './validation';

/** The largest request body accepted, as the API server (3 MiB). */
const MAX_BODY = 3 * 1024 * 1024;
/** The patch type each PATCH content type carries. */
export const patchTypes: Record<string, PatchType> = {
  'application/merge-patch+json': 'merge',
  'application/json-patch+json': 'json',
  'application/apply-patch+yaml': 'apply',
  'application/apply-patch+json': 'apply',
};

/** What a request path names. */
export interface Route {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** The request body as text; 413 past 3 MiB. */
export async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new ApiError(413, 'RequestEntityTooLarge', 'request body larger than 3 MiB');
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The deepest nesting of arrays and objects a body may have (see api/json-bounds). */
export const MAX_BODY_DEPTH = MAX_OBJECT_DEPTH;

/** `text` parsed as JSON; 400 when it is not JSON or nested too deep. */
export function parseJson(text: string, what: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw badRequest(`${what}: the body is not valid JSON: ${(err as Error).message}`);
  }
  checkDepth(v, what);
  return v;
}

/** 400 for a body nested deeper than MAX_BODY_DEPTH (walked iteratively: no recursion to overflow). */
function checkDepth(root: unknown, what: string): void {
  if (nestedDeeperThan(root, MAX_BODY_DEPTH)) {
    throw badRequest(`${what}: the body is nested more than ${MAX_BODY_DEPTH} levels deep`);
  }
}

/** A non-negative integer query parameter, or undefined when absent; 400 otherwise. */
export function intParam(q: URLSearchParams, name: string): number | undefined {
  const raw = q.get(name);
  if (raw === null || raw === '') return undefined;
  if (!/^[0-9]{1,15}$/.test(raw)) {
    throw badRequest(`invalid ${name} ${JSON.stringify(raw.slice(0, 64))}: must be a non-negative integer`);
  }
  return Number(raw);
}

/**
 * Splits the request path into its raw segments and decodes each one. The WHATWG URL parser
 * would normalise `..`, `%2e%2e` and `.` away first (so `configmaps/..` became the namespace
 * itself): routing runs on the raw segments instead, and a segment that decodes to `.`, `..`
 * or a name holding `/` or `%` is refused, as the API server refuses such path names.
 */
function pathSegments(rawPath: string): string[] {
  const segs: string[] = [];
  for (const raw of rawPath.split('/')) {
    if (raw === '') continue;
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      throw badRequest(`invalid percent-encoding in the request path segment ${JSON.stringify(raw)}`);
    }
    const bad = pathSegmentProblem(seg);
    if (bad) throw badRequest(`invalid request path segment ${JSON.stringify(seg)}: ${bad}`);
    segs.push(seg);
  }
  return segs;
}

/** The kind, namespace, name and subresource of a raw request path; 404 for what is not served. */
export function route(store: EmbeddedStore, rawPath: string): Route {
  const segs = pathSegments(rawPath);
  const pathname = `/${segs.join('/')}`;
  let group = '';
  let version: string;
  let rest: string[];
  if (segs[0] === 'api' && segs.length >= 2) {
    version = segs[1];
    rest = segs.slice(2);
  } else if (segs[0] === 'apis' && segs.length >= 3) {
    group = segs[1];
    version = segs[2];
    rest = segs.slice(3);
  } else throw new ApiError(404, 'NotFound', `the server could not find the requested resource: ${pathname}`);
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && !['status', 'finalize'].includes(rest[2])) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [plural, name, subresource, ...extra] = rest;
  const type = plural ? store.resolveType(group, version, plural) : undefined;
  if (!type || extra.length) {
    throw new ApiError(404, 'NotFound', `the server could not find the requested resource (${pathname})`);
  }
  if (subresource && !(subresource === 'status' && type.statusSubresource)) {
    throw new ApiError(404, 'NotFound', `${type.plural} has no subresource "${subresource}"`);
  }
  return { type, namespace, name, subresource };
}

/** The body of a PATCH as its content type says (apply: YAML; merge, json: JSON). */
export function parsePatch(text: string, type: PatchType): unknown {
  if (type !== 'apply') return parseJson(text, 'patch');
  let patch: unknown;
  try {
    patch = parseYaml(text);
  } catch (err) {
    throw badRequest(`patch: the body is not valid YAML: ${(err as Error).message}`);
  }
  checkDepth(patch, 'patch');
  return patch;
}
