/**
 * Generates apiextensions.k8s.io/v1 CustomResourceDefinitions for every kind in
 * src/api/groups.ts, with structural OpenAPI v3 schemas derived from upstream KubeVirt's
 * swagger.json, into crds/<group>_<plural>.yaml plus crds/all.yaml.
 *
 * Usage: `npm run gen:crds [-- path/to/swagger.json]` (default: swagger.json in
 * $KUBEVIRT_TS_UPSTREAM_DIR, else ../shared/kubevirt); then `kubectl apply -f crds/`.
 * Output is deterministic; a test regenerates it and compares with the committed files.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { type KindInfo, kinds } from '../src/api/groups';
import {
  defaultSwaggerPath,
  readSwagger,
  refTarget,
  repoRoot,
  type SwaggerDocument,
  type SwaggerSchema,
} from './gen-api';

/** What a CRD is made from: a kind's registry entry (its TypeScript type name aside). */
export type CrdKind = Omit<KindInfo, 'typeName'>;

/**
 * CRD files another generator writes into crds/ (scripts/gen-cdi-api.ts: CDI's
 * cdi.kubevirt.io kinds); this one leaves them alone and keeps them out of all.yaml.
 */
export const isForeignCrdFile = (name: string): boolean => name.startsWith('cdi.kubevirt.io_');

/** A node of a structural OpenAPI v3 schema as apiextensions.k8s.io/v1 accepts it. */
export interface CrdSchema {
  description?: string;
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  format?: string;
  enum?: string[];
  required?: string[];
  properties?: Record<string, CrdSchema>;
  additionalProperties?: CrdSchema;
  items?: CrdSchema;
  anyOf?: CrdSchema[];
  'x-kubernetes-int-or-string'?: true;
  'x-kubernetes-preserve-unknown-fields'?: true;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
}

const OBJECT_META = 'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta';
/** Definitions that are int-or-string on the wire. */
const INT_OR_STRING = new Set([
  'k8s.io.apimachinery.pkg.api.resource.Quantity',
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString',
]);
/** Definitions that hold arbitrary JSON upstream (RawExtension, managed-fields tries); the only free-form values. */
const FREE_FORM = new Set([
  'k8s.io.apimachinery.pkg.runtime.RawExtension',
  'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1',
]);
/** Formats Kubernetes validates; others (e.g. `byte` on integers) are dropped as meaningless. */
const KEPT_FORMATS = new Set(['int32', 'int64', 'float', 'double', 'date-time']);

const intOrString = (description?: string): CrdSchema => ({
  ...(description ? { description } : {}),
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  'x-kubernetes-int-or-string': true,
});

/**
 * Converts a swagger schema into a structural one: $refs inlined, defaults dropped
 * (defaulting is the webhook's job), free-form values marked to preserve unknown fields,
 * and recursive references cut off as preserved free-form objects.
 */
export function structuralSchema(
  doc: SwaggerDocument,
  s: SwaggerSchema,
  options: { root?: boolean; descriptionDepth?: number } = {},
  stack: readonly string[] = [],
  depth = 0,
): CrdSchema {
  const descriptionDepth = options.descriptionDepth ?? Number.POSITIVE_INFINITY;
  const description = depth <= descriptionDepth && s.description ? s.description : undefined;
  const sub = { descriptionDepth };
  const withDescription = (node: CrdSchema): CrdSchema => (description ? { description, ...node } : node);

  if (s.$ref) {
    const def = refTarget(s.$ref);
    if (INT_OR_STRING.has(def)) return intOrString(description);
    if (FREE_FORM.has(def)) {
      return withDescription({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    }
    if (def === OBJECT_META) {
      // The API server owns the root metadata schema; embedded metadata (templates) keeps
      // labels and annotations, so it must not be pruned.
      return options.root
        ? withDescription({ type: 'object' })
        : withDescription({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    }
    if (stack.includes(def)) {
      return withDescription({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    }
    const target = doc.definitions[def];
    if (!target) throw new Error(`$ref to missing definition ${def}`);
    const inlined = structuralSchema(doc, target, sub, [...stack, def], depth);
    // The referencing property's description is the more specific one.
    if (description) return { ...inlined, description };
    return inlined;
  }

  if (Array.isArray(s.type) || s.format === 'int-or-string') return intOrString(description);

  const node: CrdSchema = {};
  if (description) node.description = description;
  switch (s.type) {
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
      node.type = s.type;
      if (s.format && KEPT_FORMATS.has(s.format)) node.format = s.format;
      if (s.enum) node.enum = [...s.enum];
      break;
    case 'array':
      node.type = 'array';
      node.items = s.items
        ? structuralSchema(doc, s.items, sub, stack, depth + 1)
        : { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
      break;
    default: {
      node.type = 'object';
      if (s.properties) {
        node.properties = {};
        for (const key of Object.keys(s.properties).sort()) {
          node.properties[key] = structuralSchema(
            doc,
            s.properties[key],
            { ...sub, root: options.root && key === 'metadata' },
            stack,
            depth + 1,
          );
        }
        if (s.required?.length) node.required = [...s.required].sort();
      } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        node.additionalProperties = structuralSchema(doc, s.additionalProperties, sub, stack, depth + 1);
      }
      // Otherwise an empty struct upstream (a marker such as `masquerade: {}`): a plain
      // object, whose unknown content is pruned like any unknown field.
    }
  }
  for (const ext of ['x-kubernetes-list-type', 'x-kubernetes-map-type'] as const) {
    const v = s[ext];
    if (typeof v === 'string') node[ext] = v;
  }
  const keys = s['x-kubernetes-list-map-keys'];
  if (Array.isArray(keys)) node['x-kubernetes-list-map-keys'] = keys.map(String);
  return node;
}

/**
 * `kubectl apply` (client side) stores the whole object as JSON in an annotation limited
 * to 256 KiB; CRDs are kept under this budget so `kubectl apply -f crds/` works.
 */
export const CRD_JSON_BUDGET = 200_000;

/** The schema of one kind's object, from its swagger definition. */
export function kindSchema(
  doc: SwaggerDocument,
  info: CrdKind,
  descriptionDepth = Number.POSITIVE_INFINITY,
): CrdSchema {
  const def = doc.definitions[info.definition];
  if (!def) throw new Error(`swagger has no definition ${info.definition} for kind ${info.kind}`);
  return structuralSchema(doc, def, { root: true, descriptionDepth }, [info.definition]);
}

/**
 * The CustomResourceDefinition object for one kind. Schema descriptions (what
 * `kubectl explain` shows) are kept as deep as the size budget allows.
 */
export function crdFor(doc: SwaggerDocument, info: CrdKind): Record<string, unknown> {
  for (const depth of [Number.POSITIVE_INFINITY, 6, 5, 4, 3, 2, 1, 0]) {
    const crd = buildCrd(info, kindSchema(doc, info, depth));
    if (JSON.stringify(crd).length <= CRD_JSON_BUDGET) return crd;
  }
  const bare = buildCrd(info, kindSchema(doc, info, -1));
  const size = JSON.stringify(bare).length;
  if (size > CRD_JSON_BUDGET) {
    throw new Error(
      `CRD ${info.plural}.${info.group} is ${size} bytes without descriptions, over the budget`,
    );
  }
  return bare;
}

function buildCrd(info: CrdKind, schema: CrdSchema): Record<string, unknown> {
  const versions = info.versions.map((v) => {
    const version: Record<string, unknown> = { name: v.name, served: v.served, storage: v.storage };
    if (v.deprecated) version.deprecated = true;
    if (v.deprecationWarning) version.deprecationWarning = v.deprecationWarning;
    if (info.printerColumns.length > 0) {
      version.additionalPrinterColumns = info.printerColumns.map((c) => ({
        name: c.name,
        type: c.type,
        jsonPath: c.jsonPath,
        ...(c.description ? { description: c.description } : {}),
        ...(c.priority ? { priority: c.priority } : {}),
      }));
    }
    version.schema = { openAPIV3Schema: schema };
    const sub: Record<string, unknown> = {};
    if (info.subresources.status) sub.status = {};
    if (info.subresources.scale) sub.scale = { ...info.subresources.scale };
    if (Object.keys(sub).length > 0) version.subresources = sub;
    return version;
  });
  const names: Record<string, unknown> = { kind: info.kind, listKind: `${info.kind}List` };
  names.plural = info.plural;
  names.singular = info.singular;
  if (info.shortNames.length > 0) names.shortNames = [...info.shortNames];
  if (info.categories.length > 0) names.categories = [...info.categories];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${info.plural}.${info.group}`, labels: { ...info.crdLabels } },
    spec: {
      group: info.group,
      names,
      scope: info.namespaced ? 'Namespaced' : 'Cluster',
      versions,
    },
  };
}

export const crdsDir = path.join(repoRoot, 'crds');

export function crdFileName(info: CrdKind): string {
  return `${info.group}_${info.plural}.yaml`;
}

const HEADER = "# Generated by scripts/gen-crds.ts from upstream KubeVirt's swagger.json. DO NOT EDIT.\n";

/** Every CRD file's name and content, including all.yaml. */
export function generateCrdFiles(doc: SwaggerDocument): Map<string, string> {
  const files = new Map<string, string>();
  const docs: string[] = [];
  for (const info of kinds) {
    const body = stringify(crdFor(doc, info), { lineWidth: 0, aliasDuplicateObjects: false });
    files.set(crdFileName(info), `${HEADER}${body}`);
    docs.push(body);
  }
  files.set('all.yaml', `${HEADER}${docs.map((d) => `---\n${d}`).join('')}`);
  return files;
}

function main(): void {
  const doc = readSwagger(process.argv[2] ?? defaultSwaggerPath);
  const files = generateCrdFiles(doc);
  mkdirSync(crdsDir, { recursive: true });
  for (const old of readdirSync(crdsDir)) {
    if (old.endsWith('.yaml') && !files.has(old) && !isForeignCrdFile(old)) rmSync(path.join(crdsDir, old));
  }
  for (const [name, content] of files) writeFileSync(path.join(crdsDir, name), content);
  console.log(`wrote ${files.size} files to ${path.relative(repoRoot, crdsDir)}/`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main();
  } catch (err) {
    // A missing or unreadable input is the user's to fix: say so, without a stack trace.
    console.error(`gen-crds: ${(err as Error).message}`);
    process.exit(1);
  }
}
