/**
 * Manifest loading: YAML (multi-document) and JSON text into typed API objects,
 * dispatched by apiVersion/kind through the kind registry. Older served versions (the
 * deprecated `kubevirt.io/v1alpha3`) are converted to the schema version; unknown fields
 * are kept and reported; every problem names the file, document, position and field path.
 * Bad input never throws: it comes back as errors.
 */
import { open } from 'node:fs/promises';
import {
  apiVersionOf,
  findKind,
  type KnownKind,
  type KnownKinds,
  lookupKind,
  parseApiVersion,
} from '../groups';
import { MAX_OBJECT_DEPTH } from '../json-bounds';
import { checkFields, describeValue, formatFieldPath } from './field-check';
import { issue, quote, sanitizeFilename } from './issues';
import type { LoadedKnownObject, LoadOptions, LoadResult, ManifestIssue } from './manifest-types';
import { parseDocuments, type RawDoc } from './parse';
import { DEFAULT_MAX_DOCUMENTS, DEFAULT_MAX_NODES, scanLimits } from './scan-limits';

export { escapeUnsafeChars } from './issues';
export type {
  LoadedForeignObject,
  LoadedKnownObject,
  LoadedObject,
  LoadOptions,
  LoadResult,
  ManifestIssue,
  ManifestIssueCode,
  ManifestSource,
} from './manifest-types';
export { DEFAULT_MAX_DOCUMENTS, DEFAULT_MAX_NODES } from './scan-limits';

const BUILTIN_GROUPS = new Set(['', 'apps', 'batch', 'policy', 'autoscaling']);
/** Groups of other projects KubeVirt manifests use: Multus's NetworkAttachmentDefinitions. */
const COMPANION_GROUPS = new Set(['k8s.cni.cncf.io']);

/** Kubernetes' own API groups (and Multus's): objects of these pass through unchecked. */
export function isKubernetesBuiltinGroup(group: string): boolean {
  return BUILTIN_GROUPS.has(group) || COMPANION_GROUPS.has(group) || group.endsWith('.k8s.io');
}

const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Loads every object in `text` (YAML, possibly multi-document, or JSON: one object, an
 * array of objects, or a `List`).
 */
export function loadManifests(text: string, options: LoadOptions = {}): LoadResult {
  const filename = sanitizeFilename(options.filename ?? '<input>');
  const result: LoadResult = { objects: [], warnings: [], errors: [] };
  const bytes = Buffer.byteLength(text, 'utf8');
  const max = options.maxBytes ?? DEFAULT_MAX_BYTES;
  if (bytes > max) {
    result.errors.push(
      issue({
        severity: 'error',
        code: 'too-large',
        filename,
        document: 0,
        detail: `input is ${bytes} bytes, over the ${max}-byte limit`,
      }),
    );
    return result;
  }
  const maxNodes = options.maxNodes ?? DEFAULT_MAX_NODES;
  const over = scanLimits(text, {
    maxNodes,
    maxDocuments: options.maxDocuments ?? DEFAULT_MAX_DOCUMENTS,
    maxFlowDepth: MAX_OBJECT_DEPTH,
  });
  if (over) {
    result.errors.push(issue({ severity: 'error', code: 'too-large', filename, document: 0, detail: over }));
    return result;
  }
  const isForeign = options.isForeignGroup ?? isKubernetesBuiltinGroup;
  for (const raw of parseDocuments(text, filename, result, maxNodes)) {
    for (const item of expandLists(raw, filename, result)) loadOne(item, filename, isForeign, result);
  }
  return result;
}

/** Reads and loads one manifest file; I/O failures come back as errors too. */
export async function loadManifestFile(
  file: string,
  options: Omit<LoadOptions, 'filename'> = {},
): Promise<LoadResult> {
  let text: string;
  const max = options.maxBytes ?? DEFAULT_MAX_BYTES;
  try {
    text = await readCapped(file, max);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const filename = sanitizeFilename(file);
    const why =
      err.code === 'ENOENT' ? 'no such file' : err.code === 'EISDIR' ? 'is a directory' : err.message;
    return {
      objects: [],
      warnings: [],
      errors: [
        issue({ severity: 'error', code: 'io', filename, document: 0, detail: `cannot read: ${why}` }),
      ],
    };
  }
  return loadManifests(text, { ...options, filename: file });
}

/**
 * Reads at most `max + 1` bytes, so a huge file or an endless device (/dev/zero) cannot
 * exhaust memory before loadManifests' own size check rejects it.
 */
async function readCapped(file: string, max: number): Promise<string> {
  const fh = await open(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    while (total <= max) {
      const buf = Buffer.alloc(Math.min(1 << 20, max + 1 - total));
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await fh.close();
  }
}

/** A top-level JSON/YAML array, or a `kind: List`, contributes each item. */
function expandLists(raw: RawDoc, filename: string, result: LoadResult): RawDoc[] {
  const sub = (prefix: (string | number)[], value: unknown): RawDoc => ({
    value,
    document: raw.document,
    locate: (path) => raw.locate([...prefix, ...path]),
  });
  if (Array.isArray(raw.value)) return raw.value.map((v, i) => sub([i], v));
  if (isPlainObject(raw.value) && raw.value.kind === 'List' && raw.value.apiVersion === 'v1') {
    const items = raw.value.items;
    if (!Array.isArray(items)) {
      const pos = raw.locate(['items']) ?? raw.locate([]);
      result.errors.push(
        issue({
          severity: 'error',
          code: 'wrong-type',
          filename,
          document: raw.document,
          ...pos,
          kind: 'List',
          path: 'items',
          detail: `expected array, got ${describeValue(items ?? null)}`,
        }),
      );
      return [];
    }
    return items.map((v, i) => sub(['items', i], v));
  }
  return [raw];
}

function loadOne(raw: RawDoc, filename: string, isForeign: (g: string) => boolean, result: LoadResult): void {
  const at = raw.locate([]);
  const base = { filename, document: raw.document, line: at?.line, column: at?.column };
  if (!isPlainObject(raw.value)) {
    result.errors.push(
      issue({
        severity: 'error',
        code: 'not-an-object',
        ...base,
        detail: `expected a Kubernetes object (a mapping with apiVersion and kind), got ${describeValue(raw.value)}`,
      }),
    );
    return;
  }
  const obj = raw.value;
  const { apiVersion, kind } = obj;
  const meta = isPlainObject(obj.metadata) ? obj.metadata : {};
  const name = typeof meta.name === 'string' ? quoteIfOdd(meta.name) : undefined;
  if (typeof apiVersion !== 'string' || apiVersion === '' || typeof kind !== 'string' || kind === '') {
    const missing = typeof apiVersion !== 'string' || apiVersion === '' ? 'apiVersion' : 'kind';
    const value = missing === 'apiVersion' ? apiVersion : kind;
    result.errors.push(
      issue({
        severity: 'error',
        code: 'missing-type-meta',
        ...base,
        ...(raw.locate([missing]) ?? {}),
        name,
        path: missing,
        detail:
          value === undefined
            ? `missing ${missing}: every object needs apiVersion and kind`
            : `expected a non-empty string, got ${describeValue(value)}`,
      }),
    );
    return;
  }
  const kindText = quoteIfOdd(kind);
  const source = { filename, document: raw.document, line: at?.line ?? 1, column: at?.column ?? 1 };
  const found = lookupKind(apiVersion, kind);
  if (!found) {
    const { group } = parseApiVersion(apiVersion);
    if (isForeign(group)) {
      result.objects.push({
        known: false,
        kind,
        apiVersion,
        originalApiVersion: apiVersion,
        object: obj,
        source,
      });
      return;
    }
    result.errors.push(
      issue({
        severity: 'error',
        code: 'unknown-kind',
        ...base,
        kind: kindText,
        name,
        detail: unknownKindDetail(apiVersion, kind),
      }),
    );
    return;
  }

  const { info, version } = found;
  const target = apiVersionOf(info);
  const objIssues: ManifestIssue[] = [];
  if (version.name !== info.version) {
    objIssues.push(
      issue({
        severity: 'warning',
        code: 'converted-version',
        ...base,
        ...(raw.locate(['apiVersion']) ?? {}),
        kind,
        name,
        path: 'apiVersion',
        detail: `${apiVersion} ${version.deprecated ? 'is deprecated; ' : ''}converted to ${target} (same schema)`,
      }),
    );
    obj.apiVersion = target;
  }
  for (const p of checkFields(obj, info.typeName)) {
    const loc = raw.locate(p.path) ?? raw.locate(p.path.slice(0, -1)) ?? at;
    objIssues.push(
      issue({
        severity: p.code === 'unknown-field' ? 'warning' : 'error',
        code: p.code,
        filename,
        document: raw.document,
        line: loc?.line,
        column: loc?.column,
        kind,
        name,
        path: formatFieldPath(p.path, p.mapKeys),
        detail: p.detail,
      }),
    );
  }
  const errors = objIssues.filter((i) => i.severity === 'error');
  result.errors.push(...errors);
  result.warnings.push(...objIssues.filter((i) => i.severity === 'warning'));
  if (errors.length > 0) return;
  result.objects.push({
    known: true,
    kind: info.typeName,
    apiVersion: target,
    originalApiVersion: apiVersion,
    info,
    object: obj,
    source,
  } as LoadedKnownObject);
}

function quoteIfOdd(s: string): string {
  return /^[A-Za-z0-9._-]+$/.test(s) ? s : quote(s);
}

function unknownKindDetail(apiVersion: string, kind: string): string {
  const info = findKind(parseApiVersion(apiVersion).group, kind);
  if (info) {
    const served = info.versions.filter((v) => v.served).map((v) => `${info.group}/${v.name}`);
    return `apiVersion ${quote(apiVersion)} is not served for kind ${kind}; served: ${served.join(', ')}`;
  }
  return `unknown kind ${quote(kind)} in apiVersion ${quote(apiVersion)}: not a KubeVirt kind nor a Kubernetes built-in`;
}

/** The loaded objects of one kind, typed. */
export function objectsOfKind<K extends KnownKind>(result: LoadResult, kind: K): KnownKinds[K][] {
  return result.objects.filter((o) => o.known && o.kind === kind).map((o) => o.object as KnownKinds[K]);
}
