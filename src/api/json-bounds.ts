/**
 * Bounds on the shape of a decoded JSON value (nesting depth, node count), measured by an
 * iterative walk: defaulting, validation, cloning and YAML/JSON encoding all recurse, so a
 * value nested a few thousand levels deep overflowed the stack in whichever ran first (a
 * bare RangeError with no object or field named). Every boundary that decodes untrusted
 * input (the manifest loader, virt-api's webhooks and subresources, the embedded store)
 * checks here first.
 */

/**
 * The deepest nesting of arrays and objects accepted. Structured clone and JSON.stringify
 * overflow the stack a little past 2000 levels; Kubernetes objects (CRD schemas included)
 * stay far below 512.
 */
export const MAX_OBJECT_DEPTH = 512;

/** What {@link measureJson} found: the values walked, and the bound passed if one was. */
export interface JsonMeasure {
  nodes: number;
  exceeded?: 'depth' | 'nodes';
}

/**
 * Walks `root` without recursion, stopping at the first bound passed: `maxDepth` levels of
 * arrays/objects, or `maxNodes` values (objects, arrays and scalars; an object reached twice,
 * as a YAML alias makes it, counts twice: what a consumer walking it pays).
 */
export function measureJson(
  root: unknown,
  limits: { maxDepth?: number; maxNodes?: number } = {},
): JsonMeasure {
  const maxDepth = limits.maxDepth ?? MAX_OBJECT_DEPTH;
  const maxNodes = limits.maxNodes ?? Number.POSITIVE_INFINITY;
  const stack: [unknown, number][] = [[root, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (++nodes > maxNodes) return { nodes, exceeded: 'nodes' };
    if (v === null || typeof v !== 'object') continue;
    if (depth > maxDepth) return { nodes, exceeded: 'depth' };
    // Own keys only (JSON.parse makes `__proto__` an own key; it is walked like any other).
    const values = Array.isArray(v) ? v : Object.keys(v).map((k) => (v as Record<string, unknown>)[k]);
    for (const c of values) stack.push([c, depth + 1]);
  }
  return { nodes };
}

/** Whether `root` nests arrays/objects deeper than `max` levels (iteratively; see measureJson). */
export function nestedDeeperThan(root: unknown, max = MAX_OBJECT_DEPTH): boolean {
  return measureJson(root, { maxDepth: max }).exceeded === 'depth';
}
