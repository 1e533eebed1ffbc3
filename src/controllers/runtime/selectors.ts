/**
 * Label and field selectors in the Kubernetes string syntax, parsed once and matched
 * against objects (the embedded store filters with them; informers reuse them).
 */
import { badRequest } from './errors';
import type { KubeObject } from './types';

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' };

/** A parsed label selector; the empty selector matches everything. */
export interface LabelSelector {
  matches(labels: { [key: string]: string } | undefined): boolean;
  /** Its first `key=value` requirement, if any: no object without that label matches (for indexing watches). */
  equality?: { key: string; value: string };
}

const keyRe = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const valueRe = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkKey(key: string, selector: string): string {
  if (!keyRe.test(key)) throw badRequest(`invalid label selector "${selector}": invalid key "${key}"`);
  return key;
}
function checkValue(v: string, selector: string): string {
  if (!valueRe.test(v) || v.length > 63) {
    throw badRequest(`invalid label selector "${selector}": invalid value "${v}"`);
  }
  return v;
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

/** Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h`; throws BadRequest on bad syntax. */
export function parseLabelSelector(selector: string | undefined): LabelSelector {
  const reqs: Requirement[] = [];
  for (const term of splitTerms(selector ?? '')) {
    let m = /^(\S+?)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (m) {
      const key = checkKey(m[1], selector!);
      const v = checkValue(m[3], selector!);
      reqs.push({ key, op: m[2] === '!=' ? 'notin' : 'in', values: [v] });
      continue;
    }
    m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
    if (m) {
      const values = m[3]
        .split(',')
        .map((v) => v.trim())
        .map((v) => checkValue(v, selector!));
      reqs.push({ key: checkKey(m[1], selector!), op: m[2] as 'in' | 'notin', values });
      continue;
    }
    m = /^(!?)\s*(\S+)$/.exec(term);
    if (m) {
      reqs.push({ key: checkKey(m[2], selector!), op: m[1] ? '!exists' : 'exists' });
      continue;
    }
    throw badRequest(`invalid label selector "${selector}": cannot parse "${term}"`);
  }
  const eq = reqs.find((r) => r.op === 'in' && r.values.length === 1) as
    | { key: string; values: string[] }
    | undefined;
  if (reqs.length === 0) return { matches: () => true };
  return {
    equality: eq ? { key: eq.key, value: eq.values[0] } : undefined,
    matches(labels) {
      const l = labels ?? {};
      return reqs.every((r) => {
        const has = Object.hasOwn(l, r.key);
        switch (r.op) {
          case 'exists':
            return has;
          case '!exists':
            return !has;
          case 'in':
            return has && r.values.includes(l[r.key]);
          default:
            return !has || !r.values.includes(l[r.key]);
        }
      });
    },
  };
}

/** The structured `LabelSelector` of Kubernetes specs (matchLabels, matchExpressions). */
export interface LabelSelectorSpec {
  matchLabels?: { [key: string]: string };
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

/** Renders a structured selector in the string syntax that `list`/`watch` accept. */
export function formatLabelSelector(spec: LabelSelectorSpec): string {
  const terms = Object.entries(spec.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of spec.matchExpressions ?? []) {
    if (e.operator === 'Exists') terms.push(e.key);
    else if (e.operator === 'DoesNotExist') terms.push(`!${e.key}`);
    else terms.push(`${e.key} ${e.operator === 'In' ? 'in' : 'notin'} (${(e.values ?? []).join(',')})`);
  }
  return terms.join(',');
}

/** A parsed field selector. */
export interface FieldSelector {
  matches(obj: KubeObject): boolean;
  /** Its first `path=value` requirement, if any (for indexing watches; see {@link fieldValue}). */
  equality?: { path: string; value: string };
}

/** The value a field selector compares at a dotted `path` of `obj` ('' when absent). */
export function fieldValue(obj: KubeObject, path: string | readonly string[]): string {
  let cur: unknown = obj;
  for (const part of typeof path === 'string' ? path.split('.') : path) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur === undefined || cur === null ? '' : String(cur);
}

/** Parses `metadata.name=x,status.phase!=Running` (`=`, `==`, `!=` only, as the API server). */
export function parseFieldSelector(selector: string | undefined): FieldSelector {
  const reqs: { path: string; parts: string[]; neg: boolean; value: string }[] = [];
  for (const term of splitTerms(selector ?? '')) {
    const m = /^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid field selector "${selector}": cannot parse "${term}"`);
    reqs.push({ path: m[1], parts: m[1].split('.'), neg: m[2] === '!=', value: m[3] });
  }
  if (reqs.length === 0) return { matches: () => true };
  const eq = reqs.find((r) => !r.neg);
  return {
    equality: eq ? { path: eq.path, value: eq.value } : undefined,
    matches: (obj) => reqs.every((r) => (fieldValue(obj, r.parts) === r.value) !== r.neg),
  };
}
