/**
 * Checks a decoded object against the swagger-derived field schemas: fields the API does
 * not define (kept in the object, reported as warnings), JSON types that the API server
 * would refuse to decode, enum values, and missing required fields.
 */
import { quantityProblem } from '../config/quantity';
import { type ApiSchemaNode, apiSchemas } from '../generated/schemas';

/** A path from the object root: property names and list indexes. */
export type FieldSegments = readonly (string | number)[];

/** What a field check found. */
export type FieldProblemCode =
  | 'unknown-field'
  | 'wrong-type'
  | 'bad-enum'
  | 'missing-field'
  | 'out-of-range'
  | 'bad-quantity';

/** One problem at one field. */
export interface FieldProblem {
  code: FieldProblemCode;
  path: FieldSegments;
  /** For map keys: the segment index that is a map key rather than a property name. */
  mapKeys?: readonly number[];
  detail: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;
// Map keys print bare inside brackets when they are plain printable text.
const PLAIN_KEY = /^[\x21-\x7e]+$/;

/**
 * Formats segments as upstream field paths: `spec.domain.devices.disks[0].name`; map keys
 * in brackets (`metadata.labels[kubevirt.io/os]`); anything odd JSON-quoted so hostile
 * names cannot forge a path or inject control characters.
 */
export function formatFieldPath(path: FieldSegments, mapKeys: readonly number[] = []): string {
  let out = '';
  path.forEach((seg, i) => {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (mapKeys.includes(i)) {
      out += PLAIN_KEY.test(seg) && !/[[\]"]/.test(seg) ? `[${seg}]` : `[${JSON.stringify(seg)}]`;
    } else if (IDENT.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  });
  return out;
}

const YAML11_BOOLEANS = /^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$/;

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** A short, safe rendering of a user value for messages. */
export function describeValue(v: unknown): string {
  const t = jsonType(v);
  if (t === 'object' || t === 'array') return t;
  const text = JSON.stringify(v) ?? String(v);
  return `${t} ${text.length > 60 ? `${text.slice(0, 57)}...` : text}`;
}

/**
 * The ranges upstream's Go integer types decode; a value outside is refused at decode
 * there. int64 stops at JavaScript's exact-integer range (2^53-1): beyond it a number is
 * no longer the value written.
 */
export const INTEGER_RANGES: Record<'int32' | 'int64' | 'uint32', readonly [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks `value` against the schema of the generated type `typeName` (e.g.
 * `VirtualMachine`). Returns every problem; never throws for bad input.
 */
export function checkFields(value: unknown, typeName: string): FieldProblem[] {
  const root = apiSchemas[typeName];
  if (!root) throw new Error(`no field schema for type ${typeName}`);
  const problems: FieldProblem[] = [];
  walk(value, root, [], [], problems);
  return problems;
}

function resolve(node: ApiSchemaNode): ApiSchemaNode {
  let n = node;
  // Refs point at definitions, which are never refs themselves, but guard anyway.
  for (let i = 0; n.t === 'ref' && i < 8; i++) {
    const target = apiSchemas[n.ref];
    if (!target) throw new Error(`field schema refers to missing type ${n.ref}`);
    n = target;
  }
  return n;
}

function walk(
  value: unknown,
  schemaNode: ApiSchemaNode,
  path: (string | number)[],
  mapKeys: number[],
  out: FieldProblem[],
): void {
  // JSON null decodes to the zero value upstream: treat as absent.
  if (value === null || value === undefined) return;
  if (schemaNode.t === 'ref' && schemaNode.ref === 'Quantity') {
    // Every quantity field, checked before any defaulting or comparison reads it.
    if (typeof value !== 'string' && typeof value !== 'number') {
      out.push({
        code: 'wrong-type',
        path: [...path],
        mapKeys: [...mapKeys],
        detail: `expected integer or string, got ${describeValue(value)}`,
      });
      return;
    }
    // Negative values in resource lists are left to the kind's rules, which word them as upstream.
    const inMap = mapKeys.length > 0 && mapKeys[mapKeys.length - 1] === path.length - 1;
    const problem = quantityProblem(value, inMap);
    if (problem) {
      const text = String(value);
      const shown = text.length > 60 ? `${text.slice(0, 57)}...` : text;
      out.push({
        code: 'bad-quantity',
        path: [...path],
        mapKeys: [...mapKeys],
        detail: `${formatFieldPath(path, mapKeys)} '${shown}': ${problem}`,
      });
    }
    return;
  }
  const node = resolve(schemaNode);
  const actual = jsonType(value);
  const wrong = (expected: string): void => {
    out.push({
      code: 'wrong-type',
      path: [...path],
      mapKeys: [...mapKeys],
      detail: `expected ${expected}, got ${describeValue(value)}`,
    });
  };
  switch (node.t) {
    case 'any':
      return;
    case 'string':
      if (actual !== 'string') {
        wrong('string');
        return;
      }
      if (node.enum && !node.enum.includes(value as string)) {
        out.push({
          code: 'bad-enum',
          path: [...path],
          mapKeys: [...mapKeys],
          detail: `unsupported value ${JSON.stringify(value)}: supported values: ${node.enum.map((e) => JSON.stringify(e)).join(', ')}`,
        });
      }
      return;
    case 'integer': {
      if (actual !== 'integer') {
        wrong('integer');
        return;
      }
      const [min, max] = INTEGER_RANGES[node.f ?? 'int64'];
      if ((value as number) < min || (value as number) > max) {
        out.push({
          code: 'out-of-range',
          path: [...path],
          mapKeys: [...mapKeys],
          detail: `${describeValue(value)} is out of range for ${node.f ?? 'int64'}: must be from ${min} to ${max}`,
        });
      }
      return;
    }
    case 'number':
      if (actual !== 'integer' && actual !== 'number') wrong('number');
      return;
    case 'boolean':
      if (actual === 'string' && YAML11_BOOLEANS.test(value as string)) {
        // kubectl's YAML 1.1 reads `yes`/`on` as booleans; YAML 1.2 (ours) reads strings.
        wrong('boolean (YAML 1.2 reads yes/no/on/off as strings: write true or false)');
      } else if (actual !== 'boolean') wrong('boolean');
      return;
    case 'intOrString':
      if (actual !== 'string' && actual !== 'integer' && actual !== 'number') wrong('integer or string');
      return;
    case 'array':
      if (!Array.isArray(value)) {
        wrong('array');
        return;
      }
      value.forEach((item, i) => {
        path.push(i);
        walk(item, node.items, path, mapKeys, out);
        path.pop();
      });
      return;
    case 'map':
      if (!isPlainObject(value)) {
        wrong('object');
        return;
      }
      for (const key of Object.keys(value)) {
        path.push(key);
        mapKeys.push(path.length - 1);
        walk(value[key], node.values, path, mapKeys, out);
        mapKeys.pop();
        path.pop();
      }
      return;
    case 'object': {
      if (!isPlainObject(value)) {
        wrong('object');
        return;
      }
      for (const key of Object.keys(value)) {
        path.push(key);
        // Object.hasOwn: a field named "constructor" or "__proto__" is unknown, not inherited.
        if (Object.hasOwn(node.props, key)) walk(value[key], node.props[key], path, mapKeys, out);
        else
          out.push({
            code: 'unknown-field',
            path: [...path],
            mapKeys: [...mapKeys],
            detail: 'unknown field',
          });
        path.pop();
      }
      for (const req of node.required ?? []) {
        if (!Object.hasOwn(value, req) || value[req] === null) {
          out.push({
            code: 'missing-field',
            path: [...path, req],
            mapKeys: [...mapKeys],
            detail: 'required field is missing',
          });
        }
      }
      return;
    }
    case 'ref':
      return;
  }
}
