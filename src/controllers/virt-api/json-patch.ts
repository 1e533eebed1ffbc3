/**
 * The JSONPatch (RFC 6902) that turns one JSON value into another: what a mutating
 * webhook answers with. Objects are diffed key by key; arrays of the same length index by
 * index, others are replaced whole (defaults append list items rarely, and a replace is
 * always correct).
 */

/** One RFC 6902 operation. */
export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace';
  path: string;
  value?: unknown;
}

/** RFC 6901 escaping of one path segment. */
function segment(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The operations turning `from` into `to` (JSON values). */
export function jsonPatch(from: unknown, to: unknown, path = ''): JsonPatchOperation[] {
  if (isObject(from) && isObject(to)) {
    const ops: JsonPatchOperation[] = [];
    // Own keys only (`in` finds `constructor` and `__proto__` on every object).
    for (const k of Object.keys(from)) {
      if (!Object.hasOwn(to, k)) ops.push({ op: 'remove', path: `${path}/${segment(k)}` });
    }
    for (const [k, v] of Object.entries(to)) {
      const p = `${path}/${segment(k)}`;
      if (!Object.hasOwn(from, k)) ops.push({ op: 'add', path: p, value: v });
      else ops.push(...jsonPatch(from[k], v, p));
    }
    return ops;
  }
  if (Array.isArray(from) && Array.isArray(to) && from.length === to.length) {
    return from.flatMap((v, i) => jsonPatch(v, to[i], `${path}/${i}`));
  }
  if (JSON.stringify(from) === JSON.stringify(to)) return [];
  // The root cannot be replaced by the API server's patch: a webhook never needs that.
  return [{ op: 'replace', path, value: to }];
}
