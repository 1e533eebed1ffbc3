/**
 * Kubernetes resource quantities (`128Mi`, `1.5`, `100m`, `2e3`), parsed exactly with
 * BigInt fractions so `0.1` CPU is 100 millicores, not 100.00000000000001.
 */
import type { Quantity } from '../generated/types';

/** A parsed quantity: an exact fraction plus the suffix family it was written in. */
export interface ParsedQuantity {
  /** Numerator and denominator of the value in base units (bytes, cores). */
  readonly num: bigint;
  readonly den: bigint;
  /** `BinarySI` for Ki/Mi/Gi..., `DecimalSI` for plain/k/M/G..., `DecimalExponent` for e/E notation. */
  readonly format: 'BinarySI' | 'DecimalSI' | 'DecimalExponent';
}

const binary: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const decimal: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const quantityRe = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** Parses a quantity; returns undefined when the text is not a Kubernetes quantity. */
export function parseQuantity(q: Quantity | undefined | null): ParsedQuantity | undefined {
  if (q === undefined || q === null) return undefined;
  if (typeof q === 'number') {
    if (!Number.isFinite(q)) return undefined;
    return parseQuantity(String(q));
  }
  if (typeof q !== 'string') return undefined;
  // Admission reads the same few quantities many times (shape check, defaults, rules), and
  // the BigInt arithmetic below dominated it: results are immutable, so keep recent ones.
  const known = parsed.get(q);
  if (known !== undefined) return known ?? undefined;
  const p = parseText(q);
  if (parsed.size >= 1024) parsed.clear();
  parsed.set(q, p ?? null);
  return p;
}

const parsed = new Map<string, ParsedQuantity | null>();

function parseText(q: string): ParsedQuantity | undefined {
  const m = quantityRe.exec(q.trim());
  if (!m) return undefined;
  const [, sign, digits, suffix = ''] = m;
  const [intPart, fracPart = ''] = digits.split('.');
  let num = BigInt((intPart || '0') + fracPart);
  let den = 10n ** BigInt(fracPart.length);
  let format: ParsedQuantity['format'] = 'DecimalSI';
  if (suffix in binary) {
    num *= 2n ** BigInt(binary[suffix]);
    format = 'BinarySI';
  } else if (/^[eE][+-]?\d+$/.test(suffix)) {
    const exp = Number.parseInt(suffix.slice(1), 10);
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den *= 10n ** BigInt(-exp);
    format = 'DecimalExponent';
  } else {
    const exp = decimal[suffix];
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den *= 10n ** BigInt(-exp);
  }
  if (sign === '-') num = -num;
  return { num, den, format };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

/** The value rounded up to a whole base unit, like Go's `Quantity.Value()`; 0 when unset or invalid. */
export function quantityValue(q: Quantity | undefined | null): number {
  const p = parseQuantity(q);
  return p ? Number(ceilDiv(p.num, p.den)) : 0;
}

/** The value in thousandths rounded up, like Go's `Quantity.MilliValue()`; 0 when unset or invalid. */
export function quantityMilliValue(q: Quantity | undefined | null): number {
  const p = parseQuantity(q);
  return p ? Number(ceilDiv(p.num * 1000n, p.den)) : 0;
}

/** True when the quantity is unset, invalid or zero, like Go's `IsZero()` on a missing entry. */
export function quantityIsZero(q: Quantity | undefined | null): boolean {
  const p = parseQuantity(q);
  return !p || p.num === 0n;
}

/** True when the text is a valid quantity. */
export function isValidQuantity(q: unknown): boolean {
  return (typeof q === 'string' || typeof q === 'number') && parseQuantity(q as Quantity) !== undefined;
}

/** The largest magnitude a quantity may have in base units: Go's int64 (Quantity.Value()'s range). */
export const MAX_QUANTITY = 2n ** 63n - 1n;

/**
 * Why a value written in a quantity field is not one the API server would store, or
 * undefined when it is fine: not a string or finite number, surrounding or inner spaces,
 * not quantity syntax, negative (unless `allowNegative`), or beyond int64 in base units
 * (`1e400`).
 */
export function quantityProblem(q: unknown, allowNegative = false): string | undefined {
  if (typeof q === 'number') {
    if (!Number.isFinite(q)) return 'must be a finite number';
  } else if (typeof q !== 'string') return 'must be a quantity string';
  else if (q !== q.trim() || q === '') return 'quantities must match the regular expression (no spaces)';
  const p = parseQuantity(q as Quantity);
  if (!p)
    return "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  if (p.num < 0n && !allowNegative) return 'must be greater than or equal to 0';
  if (p.num / p.den > MAX_QUANTITY) return 'is too large: at most 2^63-1 in base units';
  return undefined;
}

/** Compares two quantities exactly: negative, zero or positive. */
export function compareQuantities(a: Quantity, b: Quantity): number {
  const pa = parseQuantity(a);
  const pb = parseQuantity(b);
  if (!pa || !pb) throw new Error(`cannot compare quantities '${a}' and '${b}'`);
  const d = pa.num * pb.den - pb.num * pa.den;
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/**
 * Formats a whole number of base units canonically in the given family, like Go's
 * `resource.NewQuantity(n, format).String()`: `134217728` BinarySI is `128Mi`.
 */
export function formatQuantity(value: number, format: ParsedQuantity['format'] = 'BinarySI'): string {
  if (!Number.isInteger(value)) throw new Error(`formatQuantity needs a whole number, got ${value}`);
  if (value === 0) return '0';
  const v = BigInt(value);
  if (format === 'BinarySI') {
    for (const [suffix, shift] of Object.entries(binary).reverse()) {
      const unit = 2n ** BigInt(shift);
      if (v % unit === 0n) return `${v / unit}${suffix}`;
    }
    return String(v);
  }
  for (const [suffix, exp] of Object.entries(decimal)
    .filter(([, e]) => e > 0)
    .reverse()) {
    const unit = 10n ** BigInt(exp);
    if (v % unit === 0n) return `${v / unit}${suffix}`;
  }
  return String(v);
}
