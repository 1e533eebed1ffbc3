/**
 * Manifest loading: YAML (multi-document) and JSON text into typed API objects,
 * dispatched by apiVersion/kind through the kind registry. Older served versions (the
 * deprecated `kubevirt.io/v1alpha3`) are converted to the schema version; unknown fields
 * are kept and reported; every problem names the file, document, position and field path.
 * Bad input never throws: it comes back as errors.
 */
import { open } from 'node:fs/promises';
import { CST, type Document, isMap, isScalar, Lexer, LineCounter, parseAllDocuments, visit } from 'yaml';
import {
  apiVersionOf,
  findKind,
  type KindInfo,
  type KnownKind,
  type KnownKinds,
  lookupKind,
  parseApiVersion,
} from '../groups';
import { checkFields, describeValue, type FieldProblemCode, formatFieldPath } from './field-check';

/** What kind of problem an issue reports. */
export type ManifestIssueCode =
  | FieldProblemCode
  | 'io'
  | 'too-large'
  | 'syntax'
  | 'not-an-object'
  | 'missing-type-meta'
  | 'unknown-kind'
  | 'converted-version'
  | 'foreign-kind';

/** One error or warning about a manifest. */
export interface ManifestIssue {
  severity: 'error' | 'warning';
  code: ManifestIssueCode;
  filename: string;
  /** 1-based index of the document in the file (JSON lists count their items). */
  document: number;
  /** 1-based position of the offending node, when known. */
  line?: number;
  column?: number;
  kind?: string;
  name?: string;
  /** Field path inside the object, e.g. `spec.template.spec.domain.devices.disks[0].name`. */
  path?: string;
  /** The problem alone, e.g. `unknown field`. */
  detail: string;
  /** Ready to print: `file:line:col: document N (Kind/name): path: detail`. */
  message: string;
}

/** Where a loaded object came from. */
export interface ManifestSource {
  filename: string;
  document: number;
  line: number;
  column: number;
}

/** A loaded object of a kind the project knows, typed by its kind. */
export type LoadedKnownObject = {
  [K in KnownKind]: {
    known: true;
    kind: K;
    /** The apiVersion after conversion (the kind's schema version). */
    apiVersion: string;
    /** The apiVersion as written in the manifest. */
    originalApiVersion: string;
    info: KindInfo;
    object: KnownKinds[K];
    source: ManifestSource;
  };
}[KnownKind];

/** A Kubernetes built-in object (e.g. a PriorityClass) passed through without schema checks. */
export interface LoadedForeignObject {
  known: false;
  kind: string;
  apiVersion: string;
  originalApiVersion: string;
  info?: undefined;
  object: Record<string, unknown>;
  source: ManifestSource;
}

export type LoadedObject = LoadedKnownObject | LoadedForeignObject;

/** The result of loading: objects without errors, and every issue found. */
export interface LoadResult {
  objects: LoadedObject[];
  warnings: ManifestIssue[];
  errors: ManifestIssue[];
}

export interface LoadOptions {
  /** Name used in messages; default `<input>`. */
  filename?: string;
  /** Reject larger input outright (default 16 MiB). */
  maxBytes?: number;
  /**
   * Reject input with more YAML nodes (scalars, collections, items; counted by a lexing
   * pass before anything is built) than this (default 100,000): the parsed document costs
   * about 1 KB per node, so bytes alone do not bound memory.
   */
  maxNodes?: number;
  /**
   * API groups passed through unchecked as foreign objects. Default: Kubernetes built-in
   * groups (core `v1`, `apps`, `batch`, `policy`, `autoscaling`, `*.k8s.io`).
   */
  isForeignGroup?: (group: string) => boolean;
}

const BUILTIN_GROUPS = new Set(['', 'apps', 'batch', 'policy', 'autoscaling']);

/** Kubernetes' own API groups: objects of these pass through unchecked. */
export function isKubernetesBuiltinGroup(group: string): boolean {
  return BUILTIN_GROUPS.has(group) || group.endsWith('.k8s.io');
}

const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
/** Default bound on YAML nodes in one input (see LoadOptions.maxNodes). */
export const DEFAULT_MAX_NODES = 100_000;

const NODE_TOKENS = new Set([
  'scalar',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'block-scalar-header',
  'flow-map-start',
  'flow-seq-start',
  'seq-item-ind',
]);

/**
 * Counts the nodes of `text` with the YAML lexer alone (linear, no tree), stopping past
 * `max`; an implicit null value is not counted (it builds no node).
 */
function countNodes(text: string, max: number): number {
  let n = 0;
  for (const tok of new Lexer().lex(text)) {
    if (NODE_TOKENS.has(CST.tokenType(tok) ?? '') && ++n > max) break;
  }
  return n;
}

/** A value safe to print inside a message (quotes, escapes control characters, truncates). */
function quote(v: string): string {
  const text = JSON.stringify(v);
  return text.length > 80 ? `${text.slice(0, 77)}..."` : text;
}

function formatMessage(i: Omit<ManifestIssue, 'message'>): string {
  const pos = i.line ? `:${i.line}${i.column ? `:${i.column}` : ''}` : '';
  const obj = i.kind ? ` (${i.kind}${i.name !== undefined ? `/${i.name}` : ''})` : '';
  const where = i.document > 0 ? ` document ${i.document}${obj}:` : '';
  const path = i.path ? ` ${i.path}:` : '';
  return `${i.filename}${pos}:${where}${path} ${i.detail}`;
}

/**
 * Characters that must not reach a terminal or log raw: C0/C1 controls, DEL, line and
 * paragraph separators, and bidirectional overrides (which can make text read differently
 * than it is). JSON.stringify leaves all but C0 alone, so every issue string passes here.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Replaces unsafe characters with `\uXXXX` escapes. */
export function escapeUnsafeChars(text: string): string {
  return text.replace(UNSAFE_CHARS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function issue(raw: Omit<ManifestIssue, 'message'>): ManifestIssue {
  const i = { ...raw };
  for (const k of ['filename', 'kind', 'name', 'path', 'detail'] as const) {
    const v = i[k];
    if (typeof v === 'string') i[k] = escapeUnsafeChars(v);
  }
  return { ...i, message: formatMessage(i) };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One decoded value with the means to locate paths inside it. */
interface RawDoc {
  value: unknown;
  document: number;
  locate: (path: readonly (string | number)[]) => { line: number; column: number } | undefined;
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
  if (countNodes(text, maxNodes) > maxNodes) {
    result.errors.push(
      issue({
        severity: 'error',
        code: 'too-large',
        filename,
        document: 0,
        detail: `input has more than ${maxNodes} YAML nodes (values, lists and maps), over the limit`,
      }),
    );
    return result;
  }
  const isForeign = options.isForeignGroup ?? isKubernetesBuiltinGroup;
  for (const raw of parseDocuments(text, filename, result)) {
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

/** File names reach terminal output: escape control characters. */
function sanitizeFilename(name: string): string {
  // Quoted when odd, so the escapes read as such; issue() escapes what JSON leaves raw.
  return escapeUnsafeChars(name) !== name ? JSON.stringify(name) : name;
}

function parseDocuments(text: string, filename: string, result: LoadResult): RawDoc[] {
  // JSON input is held to JSON's grammar (YAML would accept `{"kind": }` as null).
  if (/^\s*[[{]/.test(text)) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      const jsonError = checkJson(text) ?? { detail: 'JSON syntax error' };
      result.errors.push(issue({ severity: 'error', code: 'syntax', filename, document: 1, ...jsonError }));
      return [];
    }
    return jsonDocument(text, value, filename, result);
  }
  const lineCounter = new LineCounter();
  let docs: Document.Parsed[];
  try {
    // merge: `<<` merge keys work in kubectl's YAML, so they work here. Repeated keys are
    // found by duplicateKey below: the library's own check compares every pair (quadratic).
    docs = parseAllDocuments(text, {
      lineCounter,
      prettyErrors: false,
      uniqueKeys: false,
      merge: true,
    }) as Document.Parsed[];
  } catch (e) {
    result.errors.push(
      issue({
        severity: 'error',
        code: 'syntax',
        filename,
        document: 0,
        detail: `cannot parse: ${(e as Error).message}`,
      }),
    );
    return [];
  }
  if (!Array.isArray(docs)) docs = [docs];
  const out: RawDoc[] = [];
  docs.forEach((doc, i) => {
    const document = i + 1;
    if (doc.errors.length > 0) {
      for (const err of doc.errors) {
        const pos = lineCounter.linePos(err.pos[0]);
        result.errors.push(
          issue({
            severity: 'error',
            code: 'syntax',
            filename,
            document,
            line: pos.line,
            column: pos.col,
            detail: `YAML syntax error: ${firstLine(err.message)}`,
          }),
        );
      }
      return;
    }
    const dup = duplicateKey(doc);
    if (dup !== undefined) {
      const pos = lineCounter.linePos(dup);
      result.errors.push(
        issue({
          severity: 'error',
          code: 'syntax',
          filename,
          document,
          line: pos.line,
          column: pos.col,
          detail: 'YAML syntax error: Map keys must be unique',
        }),
      );
      return;
    }
    let value: unknown;
    try {
      // maxAliasCount bounds "billion laughs" alias expansion.
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      const pos = doc.contents?.range ? lineCounter.linePos(doc.contents.range[0]) : undefined;
      result.errors.push(
        issue({
          severity: 'error',
          code: 'syntax',
          filename,
          document,
          line: pos?.line,
          column: pos?.col,
          detail: `cannot decode: ${firstLine((e as Error).message)}`,
        }),
      );
      return;
    }
    // Empty documents (a trailing `---`, comments only) are skipped like kubectl does.
    if (value === null || value === undefined) return;
    out.push({
      value,
      document,
      locate: (path) => {
        const node = path.length === 0 ? doc.contents : doc.getIn(path, true);
        const range = (node as { range?: [number, number, number] } | undefined)?.range;
        if (!range) return undefined;
        const p = lineCounter.linePos(range[0]);
        return { line: p.line, column: p.col };
      },
    });
  });
  return out;
}

/**
 * The offset of the first repeated key in any map of `doc` (a repeated key is an error
 * upstream's decoder reports too), in one pass with a set per map.
 */
function duplicateKey(doc: Document.Parsed): number | undefined {
  let found: number | undefined;
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return;
      const seen = new Set<string>();
      for (const pair of map.items) {
        const k = pair.key;
        // Non-scalar keys cannot be Kubernetes field names; `<<` merges may repeat.
        if (!isScalar(k) || typeof k.value === 'symbol' || k.source === '<<') continue;
        const text = String(k.value);
        if (seen.has(text)) {
          found = k.range?.[0] ?? 0;
          return visit.BREAK;
        }
        seen.add(text);
      }
    },
  });
  return found;
}

/**
 * JSON input is parsed once, by JSON.parse; the YAML tree that maps field paths to
 * positions is built only if an issue needs a position.
 */
function jsonDocument(text: string, value: unknown, filename: string, result: LoadResult): RawDoc[] {
  const dup = duplicateJsonKey(text);
  if (dup !== undefined) {
    const before = text.slice(0, dup);
    result.errors.push(
      issue({
        severity: 'error',
        code: 'syntax',
        filename,
        document: 1,
        line: before.split('\n').length,
        column: dup - before.lastIndexOf('\n'),
        detail: 'JSON syntax error: Map keys must be unique',
      }),
    );
    return [];
  }
  let located: RawDoc['locate'] | undefined;
  const locate: RawDoc['locate'] = (path) => {
    if (!located) {
      const lineCounter = new LineCounter();
      const [doc] = parseAllDocuments(text, { lineCounter, uniqueKeys: false }) as Document.Parsed[];
      located = (p) => {
        const node = p.length === 0 ? doc?.contents : doc?.getIn(p, true);
        const range = (node as { range?: [number, number, number] } | undefined)?.range;
        if (!range) return undefined;
        const pos = lineCounter.linePos(range[0]);
        return { line: pos.line, column: pos.col };
      };
    }
    return located(path);
  };
  return [{ value, document: 1, locate }];
}

/** The offset of the first repeated key of any object in valid JSON `text`, in one pass. */
function duplicateJsonKey(text: string): number | undefined {
  const stack: { keys?: Set<string>; expectKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{') stack.push({ keys: new Set(), expectKey: true });
    else if (c === '[') stack.push({ expectKey: false });
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
    } else if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return i;
        top.keys.add(key);
        top.expectKey = false;
      }
      i = j;
    }
  }
  return undefined;
}

/** A JSON syntax error with its 1-based position, or undefined when `text` is valid JSON. */
function checkJson(text: string): { line?: number; column?: number; detail: string } | undefined {
  const fails = (t: string): Error | undefined => {
    try {
      JSON.parse(t);
      return undefined;
    } catch (e) {
      return e as Error;
    }
  };
  const err = fails(text);
  if (!err) return undefined;
  // V8's message quotes the input and repeats the offset: keep only the complaint.
  const complaint = firstLine(err.message)
    .replace(/, \.\.\.".*$|, ".*$/, '')
    .replace(/ in JSON at position \d+.*$/, '');
  const detail = `JSON syntax error: ${complaint}`;
  let offset: number | undefined;
  const m = / at position (\d+)/.exec(err.message);
  if (m) offset = Number(m[1]);
  else if (!/end of JSON input/.test(err.message)) {
    // V8 does not always say where: find the shortest prefix that fails for a reason
    // other than ending early (prefixes only get worse, so this is monotonic).
    const bad = (n: number) => {
      const e = fails(text.slice(0, n));
      if (!e || /end of JSON input|Unterminated string/.test(e.message)) return false;
      const at = / at position (\d+)/.exec(e.message);
      return !at || Number(at[1]) < n;
    };
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (bad(mid)) hi = mid;
      else lo = mid + 1;
    }
    offset = lo - 1;
  }
  if (offset === undefined) return { detail };
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n'), detail };
}

function firstLine(s: string): string {
  return s.split('\n')[0].trim();
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
