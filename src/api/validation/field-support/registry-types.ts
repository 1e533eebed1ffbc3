/**
 * The field-support registry's shape and its path patterns. Every leaf field of a spec is
 * either honoured (`effect`: the test file that shows it taking effect) or refused by
 * validation (`refused`: the reason). The field audit (test/api/audit) checks the registry
 * against the generated schema; validation refuses the `refused` entries by it.
 */
import type { FieldPath } from '../../errors';

/** A leaf (or subtree) that takes effect; `effect` names the test file that covers it. */
export interface FieldEffect {
  effect: string;
}

/** A leaf (or subtree) validation refuses, with the reason shown to the user. */
export interface FieldRefused {
  refused: string;
  /** Values that are accepted because they are what kubevirt-ts does anyway. */
  allowed?: readonly (string | number | boolean)[];
  /**
   * The validation file whose own rule refuses the field (with this reason); the generic
   * refusal then stays out, so the error is not reported twice.
   */
  rule?: string;
  /** The value the field audit sets to show the refusal, when the schema's type says too little. */
  example?: unknown;
}

export type FieldSupport = FieldEffect | FieldRefused;

/**
 * Field path pattern (relative to the spec) to its support. Patterns use `[*]` for any list
 * item, `.*` for any map key, and a trailing `.**` for a whole subtree.
 */
export type FieldRegistry = Readonly<Record<string, FieldSupport>>;

/** Whether `s` refuses its field. */
export function isRefused(s: FieldSupport): s is FieldRefused {
  return 'refused' in s;
}

/** A pattern's segments: names, `[*]`, `*` (map key) and `**` (subtree). */
export function patternSegments(pattern: string): string[] {
  return pattern.match(/\[\*\]|[^.[\]]+/g) ?? [];
}

/** Whether `pattern` covers the schema leaf `leaf` (written in the same notation). */
export function patternCovers(pattern: string, leaf: string): boolean {
  const p = patternSegments(pattern);
  const l = patternSegments(leaf);
  if (p.at(-1) === '**') {
    const prefix = p.slice(0, -1);
    return l.length > prefix.length && prefix.every((s, i) => s === l[i]);
  }
  return p.length === l.length && p.every((s, i) => s === l[i]);
}

/** The field a pattern names, without its trailing wildcards (`a.b[*].**` → `a.b`). */
export function patternField(pattern: string): string {
  return pattern.replace(/(\.\*\*|\.\*|\[\*\])+$/, '');
}

/**
 * The concrete paths under `root` where `obj` sets the field `pattern` names (its subtree
 * for `**`), skipping the `allowed` values.
 */
export function findSetFields(
  obj: unknown,
  pattern: string,
  root: FieldPath,
  allowed: readonly unknown[] = [],
): string[] {
  const segs = patternSegments(patternField(pattern));
  const out: string[] = [];
  const walk = (value: unknown, i: number, at: FieldPath) => {
    if (value === undefined || value === null) return;
    if (i === segs.length) {
      // An empty list asks for nothing; an empty object still picks a source or binding.
      if (Array.isArray(value) && value.length === 0) return;
      if (!allowed.includes(value as never)) out.push(String(at));
      return;
    }
    const seg = segs[i];
    if (seg === '[*]') {
      if (Array.isArray(value)) for (const [k, v] of value.entries()) walk(v, i + 1, at.index(k));
    } else if (typeof value === 'object' && !Array.isArray(value)) {
      const o = value as Record<string, unknown>;
      if (seg === '*') for (const [k, v] of Object.entries(o)) walk(v, i + 1, at.key(k));
      else if (Object.hasOwn(o, seg)) walk(o[seg], i + 1, at.child(seg));
    }
  };
  walk(obj, 0, root);
  return out;
}
