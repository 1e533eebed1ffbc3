/**
 * A checker for the apiextensions.k8s.io/v1 structural-schema rules and the extra
 * validation the API server applies to CRD schemas (k8s.io/apiextensions-apiserver
 * pkg/apiserver/schema and pkg/apis/apiextensions/validation). Returns every violation
 * with its path inside openAPIV3Schema; an empty list means the schema is accepted.
 */

type Node = Record<string, unknown>;

const JUNCTORS = ['allOf', 'anyOf', 'oneOf', 'not'] as const;
/** Keywords a v1 CRD schema may not use at all. */
const FORBIDDEN = [
  '$ref',
  'definitions',
  'dependencies',
  'id',
  '$schema',
  'patternProperties',
  'additionalItems',
];
/** What a junctor branch may not set (besides the int-or-string patterns). */
const NOT_IN_JUNCTORS = ['description', 'type', 'default', 'additionalProperties', 'nullable'];
const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);
const INT_OR_STRING_BRANCHES = JSON.stringify([{ type: 'integer' }, { type: 'string' }]);

function isObject(v: unknown): v is Node {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every structural-schema violation in `schema` (the CRD version's openAPIV3Schema). */
export function structuralErrors(schema: unknown): string[] {
  const errors: string[] = [];
  if (!isObject(schema)) return ['openAPIV3Schema: must be an object'];
  if (schema.type !== 'object') errors.push('openAPIV3Schema.type: the root must be of type object');
  checkNode(schema, 'openAPIV3Schema', { needsType: true, inJunctor: false }, errors);
  const meta = isObject(schema.properties) ? schema.properties.metadata : undefined;
  if (isObject(meta)) checkRootMetadata(meta, errors);
  return errors;
}

function checkRootMetadata(meta: Node, errors: string[]): void {
  // Only name/generateName restrictions are allowed on the root metadata.
  const allowed = new Set(['type', 'description', 'properties']);
  for (const k of Object.keys(meta)) {
    if (!allowed.has(k))
      errors.push(`openAPIV3Schema.properties.metadata.${k}: not allowed on root metadata`);
  }
  if (isObject(meta.properties)) {
    for (const k of Object.keys(meta.properties)) {
      if (k !== 'name' && k !== 'generateName') {
        errors.push(
          `openAPIV3Schema.properties.metadata.properties.${k}: only name and generateName may be restricted`,
        );
      }
    }
  }
}

function checkNode(
  node: Node,
  at: string,
  ctx: { needsType: boolean; inJunctor: boolean },
  errors: string[],
): void {
  for (const k of FORBIDDEN) if (k in node) errors.push(`${at}.${k}: forbidden in CRD schemas`);
  if (node.uniqueItems === true) errors.push(`${at}.uniqueItems: cannot be true`);

  const intOrString = node['x-kubernetes-int-or-string'];
  const preserve = node['x-kubernetes-preserve-unknown-fields'];
  if (intOrString !== undefined && intOrString !== true) {
    errors.push(`${at}.x-kubernetes-int-or-string: must be true or absent`);
  }
  if (preserve !== undefined && preserve !== true) {
    errors.push(`${at}.x-kubernetes-preserve-unknown-fields: must be true or absent`);
  }

  const type = node.type;
  if (type !== undefined && (typeof type !== 'string' || !TYPES.has(type))) {
    errors.push(`${at}.type: ${JSON.stringify(type)} is not a valid type`);
  }
  if (ctx.inJunctor) {
    for (const k of NOT_IN_JUNCTORS)
      if (k in node) errors.push(`${at}.${k}: must not be set inside a junctor`);
  } else if (intOrString === true) {
    if (type !== undefined) errors.push(`${at}.type: must be empty with x-kubernetes-int-or-string`);
    if (node.anyOf !== undefined && JSON.stringify(node.anyOf) !== INT_OR_STRING_BRANCHES) {
      errors.push(`${at}.anyOf: with x-kubernetes-int-or-string it must be [integer, string]`);
    }
  } else if (ctx.needsType && preserve !== true && (typeof type !== 'string' || type === '')) {
    errors.push(`${at}.type: must not be empty for specified object fields and array items`);
  }

  if (node.properties !== undefined && node.additionalProperties !== undefined) {
    errors.push(`${at}: additionalProperties and properties are mutually exclusive`);
  }
  if (node.additionalProperties === false) errors.push(`${at}.additionalProperties: false is not allowed`);
  if (node['x-kubernetes-embedded-resource'] === true && type !== 'object') {
    errors.push(`${at}.x-kubernetes-embedded-resource: requires type object`);
  }
  if (type !== undefined && Array.isArray(node.enum)) {
    node.enum.forEach((v, i) => {
      const actual = Number.isInteger(v) ? 'integer' : typeof v;
      const ok = actual === type || (type === 'number' && actual === 'integer');
      if (!ok) errors.push(`${at}.enum[${i}]: ${JSON.stringify(v)} is not of type ${type}`);
    });
  }
  checkListAndMapTypes(node, at, errors);

  if (node.properties !== undefined) {
    if (!isObject(node.properties)) errors.push(`${at}.properties: must be an object`);
    else {
      for (const [k, v] of Object.entries(node.properties)) {
        const p = `${at}.properties.${k}`;
        if (!isObject(v)) errors.push(`${p}: must be a schema object`);
        else checkNode(v, p, { needsType: !ctx.inJunctor, inJunctor: ctx.inJunctor }, errors);
      }
    }
  }
  if (node.additionalProperties !== undefined && isObject(node.additionalProperties)) {
    checkNode(
      node.additionalProperties,
      `${at}.additionalProperties`,
      ctx.inJunctor ? ctx : { needsType: true, inJunctor: false },
      errors,
    );
  }
  if (node.items !== undefined) {
    if (!isObject(node.items)) errors.push(`${at}.items: must be a single schema object`);
    else
      checkNode(node.items, `${at}.items`, { needsType: !ctx.inJunctor, inJunctor: ctx.inJunctor }, errors);
  }
  for (const j of JUNCTORS) {
    const branches = node[j];
    if (branches === undefined) continue;
    const list = j === 'not' ? [branches] : Array.isArray(branches) ? branches : [];
    list.forEach((b, i) => {
      const p = j === 'not' ? `${at}.not` : `${at}.${j}[${i}]`;
      if (!isObject(b)) {
        errors.push(`${p}: must be a schema object`);
        return;
      }
      // The int-or-string pattern is the one allowed use of type inside a junctor.
      if (intOrString === true && j === 'anyOf') return;
      checkNode(b, p, { needsType: false, inJunctor: true }, errors);
      checkJunctorFieldsSpecifiedOutside(b, node, p, errors);
    });
  }
}

/** Fields and items named in a junctor must also be specified outside of it. */
function checkJunctorFieldsSpecifiedOutside(branch: Node, outer: Node, at: string, errors: string[]): void {
  if (isObject(branch.properties)) {
    const outside = isObject(outer.properties) ? outer.properties : {};
    for (const k of Object.keys(branch.properties)) {
      if (!(k in outside) && outer['x-kubernetes-preserve-unknown-fields'] !== true) {
        errors.push(`${at}.properties.${k}: must be specified outside the junctor too`);
      }
    }
  }
  if (branch.items !== undefined && outer.items === undefined) {
    errors.push(`${at}.items: must be specified outside the junctor too`);
  }
}

function checkListAndMapTypes(node: Node, at: string, errors: string[]): void {
  const listType = node['x-kubernetes-list-type'];
  const mapKeys = node['x-kubernetes-list-map-keys'];
  if (listType !== undefined) {
    if (node.type !== 'array') errors.push(`${at}.x-kubernetes-list-type: only allowed on arrays`);
    if (!['atomic', 'set', 'map'].includes(String(listType))) {
      errors.push(`${at}.x-kubernetes-list-type: ${JSON.stringify(listType)} is not atomic, set or map`);
    }
  }
  const items = isObject(node.items) ? node.items : undefined;
  if (listType === 'set' && items) {
    const scalar = typeof items.type === 'string' && SCALARS.has(items.type);
    if (
      !scalar &&
      items['x-kubernetes-map-type'] !== 'atomic' &&
      items['x-kubernetes-int-or-string'] !== true
    ) {
      errors.push(`${at}.items: a set list needs scalar items or x-kubernetes-map-type atomic`);
    }
  }
  if (mapKeys !== undefined) {
    if (listType !== 'map') errors.push(`${at}.x-kubernetes-list-map-keys: only allowed with list-type map`);
  }
  if (listType === 'map') {
    if (!Array.isArray(mapKeys) || mapKeys.length === 0) {
      errors.push(`${at}.x-kubernetes-list-map-keys: required with list-type map`);
    } else if (items?.type !== 'object') {
      errors.push(`${at}.items: a map list needs object items`);
    } else {
      const props = isObject(items?.properties) ? items.properties : {};
      const required = Array.isArray(items.required) ? items.required : [];
      for (const key of mapKeys) {
        const prop = props[String(key)];
        if (!isObject(prop)) errors.push(`${at}.items.properties.${key}: map key must be a property`);
        else if (!(typeof prop.type === 'string' && SCALARS.has(prop.type))) {
          errors.push(`${at}.items.properties.${key}: map key must be scalar`);
        } else if (!required.includes(key) && prop.default === undefined) {
          errors.push(`${at}.items.properties.${key}: map key must be required or defaulted`);
        }
      }
    }
  }
  const mapType = node['x-kubernetes-map-type'];
  if (mapType !== undefined) {
    if (node.type !== 'object') errors.push(`${at}.x-kubernetes-map-type: only allowed on objects`);
    if (mapType !== 'atomic' && mapType !== 'granular') {
      errors.push(`${at}.x-kubernetes-map-type: ${JSON.stringify(mapType)} is not atomic or granular`);
    }
  }
}
