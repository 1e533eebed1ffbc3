/**
 * Exact Kubernetes resource quantities (`1Gi`, `500m`, `1.5G`, `2e3`), as
 * k8s.io/apimachinery's `resource.Quantity` parses them. Values are kept as an exact
 * rational (a bigint numerator over a power of ten) so byte counts never lose precision.
 */

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL_EXP: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const QUANTITY_RE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** An exact quantity: `num / 10^scale`. */
export interface Quantity {
  readonly num: bigint;
  readonly scale: number;
}

/** Thrown for a string that is not a Kubernetes quantity; names the field. */
export class QuantityError extends Error {
  constructor(
    readonly field: string,
    readonly value: unknown,
  ) {
    super(`${field}: invalid quantity ${JSON.stringify(value)} (expected e.g. 128Mi, 1Gi, 500m, 2)`);
    this.name = 'QuantityError';
  }
}

/** Parses a quantity string (or a plain number) exactly; `field` names it in errors. */
export function parseQuantity(value: string | number, field = 'quantity'): Quantity {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string') throw new QuantityError(field, value);
  const m = QUANTITY_RE.exec(text.trim());
  if (!m) throw new QuantityError(field, value);
  const [, sign, digits, suffix = ''] = m;
  const [intPart, fracPart = ''] = digits.split('.');
  let num = BigInt((intPart || '0') + fracPart);
  let scale = fracPart.length;
  if (suffix in BINARY) {
    num *= BINARY[suffix];
  } else {
    const exp = suffix in DECIMAL_EXP ? DECIMAL_EXP[suffix] : Number(suffix.slice(1));
    if (!Number.isFinite(exp) || Math.abs(exp) > 40) throw new QuantityError(field, value);
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else scale -= exp;
  }
  if (sign === '-') num = -num;
  return { num, scale };
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** Divides rounding toward +infinity (apimachinery rounds quantities "up", away from zero for positives). */
function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n === b > 0n ? q + 1n : q;
}

/** `Quantity.Value()`: the integer value rounded up. */
export function quantityValue(q: Quantity): bigint {
  return ceilDiv(q.num, pow10(q.scale));
}

/** `Quantity.MilliValue()`: the value in thousandths, rounded up. */
export function quantityMilliValue(q: Quantity): bigint {
  return ceilDiv(q.num * 1000n, pow10(q.scale));
}

/** `Quantity.ScaledValue(scale)`: ceil(q / 10^scale). */
export function quantityScaledValue(q: Quantity, scale: number): bigint {
  if (scale >= 0) return ceilDiv(q.num, pow10(q.scale + scale));
  return ceilDiv(q.num * pow10(-scale), pow10(q.scale));
}

/** Bytes of a memory quantity string, rounded up; `undefined` stays `undefined`. */
export function bytesOf(value: string | number | undefined, field: string): bigint | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  return quantityValue(parseQuantity(value, field));
}

/** Formats a byte count the way the API server canonicalises binary quantities. */
export function formatBytes(bytes: bigint): string {
  if (bytes === 0n) return '0';
  for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki']) {
    const unit = BINARY[suffix];
    if (bytes % unit === 0n) return `${bytes / unit}${suffix}`;
  }
  return bytes.toString();
}

/** Formats a CPU amount given in millicores: whole cores when exact, else `Nm`. */
export function formatMilliCPU(milli: bigint): string {
  return milli % 1000n === 0n ? (milli / 1000n).toString() : `${milli}m`;
}
