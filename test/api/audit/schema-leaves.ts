/**
 * The field audit's view of the generated API schema (src/api/generated/schemas.ts): every
 * leaf field path of a definition, in the registry's pattern notation, and a value of the
 * leaf's type to set it with.
 */
import { type ApiSchemaNode, apiSchemas } from '../../../src/api/generated/schemas';
import { patternSegments } from '../../../src/api/validation/field-support';

function resolve(node: ApiSchemaNode): ApiSchemaNode {
  let n = node;
  while (n.t === 'ref') n = apiSchemas[n.ref]!;
  return n;
}

/**
 * Leaf paths of definition `type` (`domain.cpu.cores`, `volumes[*].name`, `nodeSelector.*`);
 * an object without properties is a leaf; `skip` lists paths not to descend into.
 */
export function schemaLeaves(type: string, skip: readonly string[] = []): string[] {
  const out: string[] = [];
  const walk = (node: ApiSchemaNode, path: string, seen: readonly string[]) => {
    if (skip.includes(path)) return;
    if (node.t === 'ref') {
      if (seen.includes(node.ref)) throw new Error(`recursive schema at ${path} (${node.ref})`);
      walk(apiSchemas[node.ref]!, path, [...seen, node.ref]);
    } else if (node.t === 'array') walk(node.items, `${path}[*]`, seen);
    else if (node.t === 'map') walk(node.values, `${path}.*`, seen);
    else if (node.t === 'object' && Object.keys(node.props).length > 0) {
      for (const [k, v] of Object.entries(node.props)) walk(v, path ? `${path}.${k}` : k, seen);
    } else out.push(path);
  };
  walk({ t: 'ref', ref: type }, '', []);
  return out;
}

/** A value of the leaf's JSON type other than `allowed` (`{}` for objects and `any`). */
function sampleValue(node: ApiSchemaNode, allowed: readonly unknown[]): unknown {
  const n = resolve(node);
  switch (n.t) {
    case 'string':
      return n.enum?.find((v) => !allowed.includes(v)) ?? 'x';
    case 'integer':
    case 'number':
    case 'intOrString':
      return 1;
    case 'boolean':
      return !allowed.includes(true);
    default:
      return {};
  }
}

/**
 * Sets leaf `leaf` of definition `type` in `obj` (first list items, map key `k`), creating
 * what is missing; the value is `example`, else one of the leaf's type not in `allowed`.
 */
export function setLeaf(
  obj: Record<string, unknown>,
  type: string,
  leaf: string,
  opts: { allowed?: readonly unknown[]; example?: unknown } = {},
): void {
  const segs = patternSegments(leaf);
  let node = resolve({ t: 'ref', ref: type });
  let holder: Record<string, unknown> | unknown[] = obj;
  let key: string | number = '';
  const containers: { holder: Record<string, unknown> | unknown[]; key: string | number }[] = [];
  for (const seg of segs) {
    if (seg === '[*]') {
      if (node.t !== 'array') throw new Error(`${leaf}: [*] on a non-list`);
      node = resolve(node.items);
      key = 0;
    } else if (seg === '*') {
      if (node.t !== 'map') throw new Error(`${leaf}: * on a non-map`);
      node = resolve(node.values);
      key = 'k';
    } else {
      if (node.t !== 'object' || !node.props[seg]) throw new Error(`${leaf}: no field ${seg}`);
      const child = node.props[seg];
      node = resolve(child);
      key = seg;
    }
    containers.push({ holder, key });
    const isLast = containers.length === segs.length;
    if (isLast) break;
    const existing = (holder as Record<string | number, unknown>)[key];
    const next = existing ?? (node.t === 'array' ? [] : {});
    (holder as Record<string | number, unknown>)[key] = next;
    holder = next as Record<string, unknown> | unknown[];
  }
  (holder as Record<string | number, unknown>)[key] =
    opts.example !== undefined ? opts.example : sampleValue(node, opts.allowed ?? []);
}
