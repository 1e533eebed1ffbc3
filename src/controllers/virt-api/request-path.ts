/**
 * How virt-api reads a request's path: on the raw segments the client sent, never on a
 * cleaned path. The WHATWG URL parser resolves `..`, `%2e%2e` and backslashes first, so
 * `.../namespaces/alice/virtualmachineinstances/a/../../../victim/...` would route to
 * `victim` while the API server authorised `alice`. Here a segment that is or decodes to
 * `.` or `..`, or that holds a backslash or an encoded `/`, `\` or `%`, is refused with 400
 * (as the embedded store's server does, runtime/embedded/rest-request.ts), and the route
 * is read from the decoded segments, which are then what virt-api authorises (./authorizer).
 */
import { HttpError } from './http-error';

/** A request's path, split: the decoded segments and the query. */
export interface RequestPath {
  /** Decoded path segments, without the leading empty one; `/` gives `[]`. */
  segments: string[];
  /** The segments joined again (`/` + segments), for messages and webhook lookups. */
  path: string;
  query: URLSearchParams;
}

const bad = (what: string) => new HttpError(400, `invalid request path: ${what}`);

/** Why a decoded segment may not be routed on, or undefined. */
function segmentProblem(seg: string): string | undefined {
  if (seg === '.' || seg === '..') return 'a "." or ".." segment';
  if (seg.includes('/')) return 'an encoded "/" in a segment';
  if (seg.includes('\\')) return 'a backslash in a segment';
  if (seg.includes('%')) return 'a doubly encoded segment';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(seg)) return 'a control character in a segment';
  return undefined;
}

/**
 * Splits `rawUrl` (a request's `url` as received: path and query) into decoded segments;
 * throws a 400 {@link HttpError} for a path whose meaning a normaliser would change.
 */
export function parseRequestPath(rawUrl: string): RequestPath {
  const qAt = rawUrl.indexOf('?');
  const rawPath = qAt < 0 ? rawUrl : rawUrl.slice(0, qAt);
  const query = new URLSearchParams(qAt < 0 ? '' : rawUrl.slice(qAt + 1));
  if (!rawPath.startsWith('/')) throw bad('it must start with "/"');
  if (rawPath.includes('\\')) throw bad('a backslash');
  const raws = rawPath.slice(1).split('/');
  // One trailing "/" is dropped, as the API server does; any other empty segment is refused.
  if (raws.length > 1 && raws[raws.length - 1] === '') raws.pop();
  if (raws.length === 1 && raws[0] === '') return { segments: [], path: '/', query };
  const segments = raws.map((raw) => {
    if (raw === '') throw bad('an empty segment');
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      throw bad(`invalid percent-encoding in ${JSON.stringify(raw.slice(0, 64))}`);
    }
    const problem = segmentProblem(seg);
    if (problem) throw bad(`${problem} (${JSON.stringify(raw.slice(0, 64))})`);
    return seg;
  });
  return { segments, path: `/${segments.join('/')}`, query };
}

/** A namespaced `subresources.kubevirt.io` request, as read from its segments. */
export interface SubresourceRoute {
  version: string;
  namespace: string;
  /** `virtualmachines`, `virtualmachineinstances`, or `expand-vm-spec` (no name). */
  resource: 'virtualmachines' | 'virtualmachineinstances' | 'expand-vm-spec';
  name?: string;
  /** The segments after the name, joined by `/` (`pause`, `portforward/22/tcp`, `vnc/screenshot`). */
  subresource?: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const SUB_SEGMENT = /^[a-z0-9-]{1,63}$/;

/**
 * The namespaced route of `/apis/{group}/{version}/namespaces/{ns}/{resource}/{name}/{sub...}`
 * or `.../namespaces/{ns}/expand-vm-spec`; undefined for any other path (a 404).
 */
export function subresourceRoute(
  segments: readonly string[],
  group: string,
  versions: readonly string[],
): SubresourceRoute | undefined {
  const [apis, g, version, namespaces, namespace, resource, name, ...rest] = segments;
  if (apis !== 'apis' || g !== group || !versions.includes(version ?? '') || namespaces !== 'namespaces')
    return undefined;
  if (!namespace || !DNS_LABEL.test(namespace)) return undefined;
  if (resource === 'expand-vm-spec' && segments.length === 6)
    return { version: version as string, namespace, resource };
  if (resource !== 'virtualmachines' && resource !== 'virtualmachineinstances') return undefined;
  if (!name || !DNS_SUBDOMAIN.test(name) || rest.length === 0) return undefined;
  if (!rest.every((s) => SUB_SEGMENT.test(s))) return undefined;
  return { version: version as string, namespace, resource, name, subresource: rest.join('/') };
}
