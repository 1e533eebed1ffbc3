/**
 * Generates the kubevirt.io API types and the compact field schemas from upstream
 * KubeVirt's OpenAPI v2 document (swagger.json in $KUBEVIRT_TS_UPSTREAM_DIR, else in
 * ../shared/kubevirt next to the clone):
 *
 *   src/api/generated/types.ts    one exported interface (or alias) per definition
 *   src/api/generated/schemas.ts  a compact field tree per definition, used by the
 *                                 manifest loader to report unknown fields and wrong types
 *
 * Usage: `npm run gen:api [-- path/to/swagger.json]` (default: see upstreamKubevirtDir). Output is deterministic; a test
 * regenerates it and compares with the committed files.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** One OpenAPI v2 schema node, as far as the KubeVirt document uses it. */
export interface SwaggerSchema {
  description?: string;
  type?: string | string[];
  format?: string;
  enum?: string[];
  required?: string[];
  properties?: Record<string, SwaggerSchema>;
  additionalProperties?: SwaggerSchema | boolean;
  items?: SwaggerSchema;
  $ref?: string;
  default?: unknown;
  [extension: `x-${string}`]: unknown;
}

/** The parts of an OpenAPI v2 document the generators read. */
export interface SwaggerDocument {
  definitions: Record<string, SwaggerSchema>;
}

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Upstream reference data, outside the repository (never copied in): the directory
 * named by KUBEVIRT_TS_UPSTREAM_DIR, else ../shared/kubevirt next to the clone.
 */
export const upstreamKubevirtDir = process.env.KUBEVIRT_TS_UPSTREAM_DIR
  ? path.resolve(process.env.KUBEVIRT_TS_UPSTREAM_DIR)
  : path.resolve(repoRoot, '../shared/kubevirt');
export const defaultSwaggerPath = path.join(upstreamKubevirtDir, 'swagger.json');

/** Reads an OpenAPI v2 document; a missing file is an error saying where to put it. */
export function readSwagger(file = defaultSwaggerPath): SwaggerDocument {
  if (!existsSync(file)) {
    throw new Error(
      `${file}: no such file. The generators read upstream KubeVirt's swagger.json: pass its path, ` +
        'set KUBEVIRT_TS_UPSTREAM_DIR to a directory holding it, or place it at ../shared/kubevirt/swagger.json',
    );
  }
  return JSON.parse(readFileSync(file, 'utf8')) as SwaggerDocument;
}

const KUBEVIRT_PREFIXES = ['v1.', 'v1beta1.', 'v1alpha1.'];
const CORE_PREFIX = 'k8s.io.api.core.v1.';
const META_PREFIX = 'k8s.io.apimachinery.pkg.apis.meta.v1.';

/** Definitions whose TypeScript shape is fixed rather than derived from the document. */
const SPECIAL_ALIASES: Record<string, { name: string; type: string }> = {
  'k8s.io.apimachinery.pkg.api.resource.Quantity': { name: 'Quantity', type: 'string | number' },
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': { name: 'IntOrString', type: 'string | number' },
  'k8s.io.apimachinery.pkg.runtime.RawExtension': { name: 'RawExtension', type: 'Record<string, unknown>' },
  'k8s.io.apimachinery.pkg.apis.meta.v1.Time': { name: 'Time', type: 'string' },
  'k8s.io.apimachinery.pkg.apis.meta.v1.Duration': { name: 'Duration', type: 'string' },
  'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1': { name: 'FieldsV1', type: 'Record<string, unknown>' },
};

function shortName(def: string): string {
  return def.slice(def.lastIndexOf('.') + 1);
}

/**
 * The naming contract: `v1.Foo` -> `Foo`; `v1beta1.Foo`/`v1alpha1.Foo` -> `Foo` unless a
 * v1 definition has that name, then `V1beta1Foo`/`V1alpha1Foo`; Kubernetes core/meta types
 * by short name unless a KubeVirt definition has it, then `CoreFoo`/`MetaFoo`.
 */
export function typeNames(doc: SwaggerDocument): Map<string, string> {
  const defs = Object.keys(doc.definitions).sort();
  const v1 = new Set(defs.filter((d) => d.startsWith('v1.')).map(shortName));
  const kubevirt = new Set(defs.filter((d) => KUBEVIRT_PREFIXES.some((p) => d.startsWith(p))).map(shortName));
  const names = new Map<string, string>();
  for (const def of defs) {
    const short = shortName(def);
    let name: string;
    if (SPECIAL_ALIASES[def]) name = SPECIAL_ALIASES[def].name;
    else if (def.startsWith('v1.')) name = short;
    else if (def.startsWith('v1beta1.')) name = v1.has(short) ? `V1beta1${short}` : short;
    else if (def.startsWith('v1alpha1.')) name = v1.has(short) ? `V1alpha1${short}` : short;
    else if (def.startsWith(CORE_PREFIX)) name = kubevirt.has(short) ? `Core${short}` : short;
    else if (def.startsWith(META_PREFIX)) name = kubevirt.has(short) ? `Meta${short}` : short;
    else name = short;
    names.set(def, name);
  }
  const seen = new Map<string, string>();
  for (const [def, name] of names) {
    const other = seen.get(name);
    if (other) throw new Error(`type name ${name} would be used by both ${other} and ${def}`);
    seen.set(name, def);
  }
  return names;
}

export function refTarget(ref: string): string {
  const prefix = '#/definitions/';
  if (!ref.startsWith(prefix)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(prefix.length);
}

/**
 * Definitions to emit: every KubeVirt-defined definition (all kinds of all groups, their
 * lists, subresource bodies) and everything reachable from them.
 */
export function reachableDefinitions(doc: SwaggerDocument): string[] {
  const roots = Object.keys(doc.definitions).filter((d) => KUBEVIRT_PREFIXES.some((p) => d.startsWith(p)));
  const seen = new Set<string>();
  const stack = [...roots];
  const visit = (s: SwaggerSchema | boolean | undefined): void => {
    if (!s || typeof s !== 'object') return;
    if (s.$ref) stack.push(refTarget(s.$ref));
    for (const p of Object.values(s.properties ?? {})) visit(p);
    visit(s.items);
    visit(s.additionalProperties);
  };
  while (stack.length > 0) {
    const def = stack.pop()!;
    if (seen.has(def)) continue;
    const schema = doc.definitions[def];
    if (!schema) throw new Error(`$ref to missing definition ${def}`);
    seen.add(def);
    visit(schema);
  }
  return [...seen].sort();
}

function docComment(text: string | undefined, indent: string): string {
  if (!text?.trim()) return '';
  const lines = text
    .replace(/\*\//g, '*\\/')
    .trim()
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''));
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => (l ? `${indent} * ${l}` : `${indent} *`)).join('\n')}\n${indent} */\n`;
}

function propertyKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

function tsType(s: SwaggerSchema, names: Map<string, string>): string {
  if (s.$ref) return names.get(refTarget(s.$ref))!;
  if (s.enum && s.enum.length > 0) return s.enum.map((e) => JSON.stringify(e)).join(' | ');
  switch (s.type) {
    case 'string':
      return s.format === 'int-or-string' ? 'string | number' : 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array': {
      const item = s.items ? tsType(s.items, names) : 'unknown';
      return /[|&]/.test(item) ? `(${item})[]` : `${item}[]`;
    }
    case 'object':
    case undefined:
      if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        return `Record<string, ${tsType(s.additionalProperties, names)}>`;
      }
      return 'Record<string, unknown>';
    default:
      if (Array.isArray(s.type)) return 'string | number';
      throw new Error(`unsupported schema type ${JSON.stringify(s.type)}`);
  }
}

/** Where generated code says it came from (another generator, e.g. CDI's, passes its own). */
export interface GeneratedFrom {
  script: string;
  document: string;
  command: string;
}
const KUBEVIRT_SOURCE: GeneratedFrom = {
  script: 'scripts/gen-api.ts',
  document: "upstream KubeVirt's swagger.json",
  command: 'npm run gen:api',
};

const HEADER = (what: string, from: GeneratedFrom = KUBEVIRT_SOURCE) =>
  `// Code generated by ${from.script} from ${from.document}. DO NOT EDIT.\n// ${what}\n// Regenerate with \`${from.command}\`.\n\n`;

/** Renders src/api/generated/types.ts. */
export function generateTypes(
  doc: SwaggerDocument,
  from: GeneratedFrom = KUBEVIRT_SOURCE,
  what = 'TypeScript types for the kubevirt.io API groups and the Kubernetes types they use.',
): string {
  const names = typeNames(doc);
  let out = HEADER(what, from);
  for (const def of reachableDefinitions(doc)) {
    const schema = doc.definitions[def];
    const name = names.get(def)!;
    out += docComment(
      `${schema.description ?? ''}${schema.description ? '\n\n' : ''}Upstream: \`${def}\``,
      '',
    );
    const special = SPECIAL_ALIASES[def];
    if (special) {
      out += `export type ${name} = ${special.type};\n\n`;
      continue;
    }
    if (!schema.properties) {
      out += `export type ${name} = ${tsType(schema, names)};\n\n`;
      continue;
    }
    const required = new Set(schema.required ?? []);
    out += `export interface ${name} {\n`;
    for (const prop of Object.keys(schema.properties).sort()) {
      const p = schema.properties[prop];
      out += docComment(p.description, '  ');
      out += `  ${propertyKey(prop)}${required.has(prop) ? '' : '?'}: ${tsType(p, names)};\n`;
    }
    out += '}\n\n';
  }
  return `${out.trimEnd()}\n`;
}

/** Compact field-tree node emitted into schemas.ts (see ApiSchemaNode there). */
type Node =
  | { t: 'string' | 'number' | 'boolean' | 'intOrString' | 'any'; enum?: string[] }
  | { t: 'integer'; f?: 'int32' | 'int64' | 'uint32' }
  | { t: 'ref'; ref: string }
  | { t: 'array'; items: Node }
  | { t: 'map'; values: Node }
  | { t: 'object'; props: Record<string, Node>; required?: string[] };

/**
 * Integer fields whose Go type is narrower than the swagger format says: openapi-gen
 * writes Go's uint32 as int64, and upstream decodes (and refuses) by the Go type. bootOrder
 * is a Go uint, but it becomes QEMU's bootindex, an int32.
 */
const GO_INTEGER_FORMATS: Record<string, 'int32' | 'uint32'> = {
  'v1.CPU.cores': 'uint32',
  'v1.CPU.sockets': 'uint32',
  'v1.CPU.threads': 'uint32',
  'v1.CPU.maxSockets': 'uint32',
  'v1.CPUTopology.cores': 'uint32',
  'v1.CPUTopology.sockets': 'uint32',
  'v1.CPUTopology.threads': 'uint32',
  'v1beta1.CPUInstancetype.guest': 'uint32',
  'v1beta1.CPUInstancetype.maxSockets': 'uint32',
  'v1.Disk.bootOrder': 'int32',
  'v1.Interface.bootOrder': 'int32',
};

function compact(s: SwaggerSchema, names: Map<string, string>, where = ''): Node {
  if (s.$ref) return { t: 'ref', ref: names.get(refTarget(s.$ref))! };
  if (Array.isArray(s.type) || s.format === 'int-or-string') return { t: 'intOrString' };
  switch (s.type) {
    case 'string':
      return s.enum ? { t: 'string', enum: [...s.enum] } : { t: 'string' };
    case 'integer': {
      const f =
        GO_INTEGER_FORMATS[where] ?? (s.format === 'int32' || s.format === 'int64' ? s.format : undefined);
      return f ? { t: 'integer', f } : { t: 'integer' };
    }
    case 'number':
      return { t: 'number' };
    case 'boolean':
      return { t: 'boolean' };
    case 'array':
      return { t: 'array', items: s.items ? compact(s.items, names) : { t: 'any' } };
    default:
      if (s.properties) {
        const props: Record<string, Node> = {};
        for (const k of Object.keys(s.properties).sort())
          props[k] = compact(s.properties[k], names, where ? `${where}.${k}` : '');
        return s.required?.length
          ? { t: 'object', props, required: [...s.required].sort() }
          : { t: 'object', props };
      }
      if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        return { t: 'map', values: compact(s.additionalProperties, names) };
      }
      // An empty struct upstream (a marker such as `masquerade: {}`): fields in it are unknown.
      return { t: 'object', props: {} };
  }
}

/** Renders src/api/generated/schemas.ts. */
export function generateSchemas(doc: SwaggerDocument, from: GeneratedFrom = KUBEVIRT_SOURCE): string {
  const names = typeNames(doc);
  const defs = reachableDefinitions(doc);
  let out = HEADER('Compact field schemas per definition, keyed by TypeScript type name.', from);
  out += `/** A node of the compact field tree: enough to find unknown fields and wrong JSON types. */
export type ApiSchemaNode =
  | { t: 'string' | 'number' | 'boolean' | 'intOrString' | 'any'; enum?: string[] }
  | { t: 'integer'; f?: 'int32' | 'int64' | 'uint32' }
  | { t: 'ref'; ref: string }
  | { t: 'array'; items: ApiSchemaNode }
  | { t: 'map'; values: ApiSchemaNode }
  | { t: 'object'; props: Record<string, ApiSchemaNode>; required?: string[] };

`;
  out += '/** Swagger definition name -> TypeScript type name. */\n';
  out += 'export const apiTypeNames: Record<string, string> = {\n';
  for (const def of defs) out += `  ${JSON.stringify(def)}: ${JSON.stringify(names.get(def))},\n`;
  out += '};\n\n';
  out += '/** TypeScript type name -> its field schema. */\n';
  out += 'export const apiSchemas: Record<string, ApiSchemaNode> = {\n';
  for (const def of defs) {
    const schema = doc.definitions[def];
    const special = SPECIAL_ALIASES[def];
    let node: Node;
    if (special?.name === 'Quantity' || special?.name === 'IntOrString') node = { t: 'intOrString' };
    else if (special?.name === 'RawExtension' || special?.name === 'FieldsV1') node = { t: 'any' };
    else node = compact(schema, names, def);
    out += `  ${names.get(def)}: ${JSON.stringify(node)},\n`;
  }
  out += '};\n';
  return out;
}

export const typesOutPath = path.join(repoRoot, 'src/api/generated/types.ts');
export const schemasOutPath = path.join(repoRoot, 'src/api/generated/schemas.ts');

function main(): void {
  const doc = readSwagger(process.argv[2] ?? defaultSwaggerPath);
  writeFileSync(typesOutPath, generateTypes(doc));
  writeFileSync(schemasOutPath, generateSchemas(doc));
  console.log(
    `wrote ${path.relative(repoRoot, typesOutPath)} (${reachableDefinitions(doc).length} definitions)`,
  );
  console.log(`wrote ${path.relative(repoRoot, schemasOutPath)}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main();
  } catch (err) {
    // A missing or unreadable input is the user's to fix: say so, without a stack trace.
    console.error(`gen-api: ${(err as Error).message}`);
    process.exit(1);
  }
}
