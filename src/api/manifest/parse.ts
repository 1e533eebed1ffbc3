/**
 * Text to raw documents: YAML (multi-document) and JSON parsing, each document's depth and
 * expanded size, duplicate-key checks, and the means to locate a field path in the source.
 */
import { type Document, isMap, isScalar, LineCounter, parseAllDocuments, visit } from 'yaml';
import { MAX_OBJECT_DEPTH, measureJson } from '../json-bounds';
import { issue } from './issues';
import type { LoadResult } from './manifest-types';
import { DEFAULT_MAX_NODES } from './scan-limits';

/** One decoded value with the means to locate paths inside it. */
export interface RawDoc {
  value: unknown;
  document: number;
  locate: (path: readonly (string | number)[]) => { line: number; column: number } | undefined;
}

/** A RangeError from the parser is its recursion overflowing: say so with the limit. */
function parseFailure(e: unknown): string {
  if (e instanceof RangeError) return tooDeep;
  return `cannot parse: ${firstLine((e as Error).message)}`;
}
const tooDeep = `nested more than ${MAX_OBJECT_DEPTH} levels deep, over the limit`;

/**
 * Whether a decoded value is within the depth bound and, counting each alias at its expanded
 * size, within the node budget left (`budget.nodes`, decremented); an issue otherwise.
 */
function boundsProblem(value: unknown, budget: { nodes: number }, maxNodes: number): string | undefined {
  const m = measureJson(value, { maxDepth: MAX_OBJECT_DEPTH, maxNodes: budget.nodes });
  if (m.exceeded === 'depth') return tooDeep;
  if (m.exceeded === 'nodes') {
    return `decodes to more than ${maxNodes} values once aliases are expanded, over the limit`;
  }
  budget.nodes -= m.nodes;
  return undefined;
}

/**
 * The documents of `text` (already within ./scan-limits' bounds), decoded; problems go to
 * `result.errors` and leave their document out.
 */
export function parseDocuments(
  text: string,
  filename: string,
  result: LoadResult,
  maxNodes = DEFAULT_MAX_NODES,
): RawDoc[] {
  const budget = { nodes: maxNodes };
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
    const problem = boundsProblem(value, budget, maxNodes);
    if (problem) {
      result.errors.push(
        issue({ severity: 'error', code: 'too-large', filename, document: 1, detail: problem }),
      );
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
        code: e instanceof RangeError ? 'too-large' : 'syntax',
        filename,
        document: 0,
        detail: parseFailure(e),
      }),
    );
    return [];
  }
  if (!Array.isArray(docs)) docs = [docs];
  const out: RawDoc[] = [];
  docs.forEach((doc, i) => {
    const document = i + 1;
    if (doc.errors.length > 0) {
      // The composer catches its own recursion overflowing and reports it as a YAML error.
      if (doc.errors.some((e) => /call stack size/.test(e.message))) {
        result.errors.push(
          issue({ severity: 'error', code: 'too-large', filename, document, detail: tooDeep }),
        );
        return;
      }
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
      if (e instanceof RangeError) {
        result.errors.push(
          issue({ severity: 'error', code: 'too-large', filename, document, detail: tooDeep }),
        );
        return;
      }
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
    const problem = boundsProblem(value, budget, maxNodes);
    if (problem) {
      result.errors.push(
        issue({ severity: 'error', code: 'too-large', filename, document, detail: problem }),
      );
      return;
    }
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
