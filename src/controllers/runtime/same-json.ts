/**
 * Whether two values would be the same stored object: JSON equality with object keys in
 * any order and undefined-valued keys as absent. A controller compares what it read from
 * the API server with what it computed before it writes; the server returns a custom
 * resource's keys sorted (Go marshals its unstructured maps so) while code builds them in
 * its own order, so a JSON.stringify comparison saw a difference in every read-back
 * condition and wrote the same object again (the API server answers such a write 200
 * without a new resourceVersion: a request per reconcile for nothing).
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    // JSON has no undefined: an absent value and an undefined one are the same.
    return a === b || (a === undefined && b === undefined);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    // JSON.stringify writes an undefined element as null.
    return a.length === bb.length && a.every((x, i) => sameJson(x ?? null, bb[i] ?? null));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  const ak = keys(ao);
  if (ak.length !== keys(bo).length) return false;
  // Own keys only: JSON.parse makes `__proto__` an own key, and `bo.__proto__` read through
  // the prototype chain (Object.prototype, no keys) once compared equal to `{}`.
  return ak.every((k) => Object.hasOwn(bo, k) && bo[k] !== undefined && sameJson(ao[k], bo[k]));
}
