/** Go `time.Duration` strings as the KubeVirt CR carries them (`metav1.Duration`: "48h", "1h30m", "90s", "500ms"). */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;

/** Milliseconds of a Go duration string; throws naming `path` when it is not one. */
export function parseDuration(value: string, path: string): number {
  if (value === '0') return 0;
  let i = 0;
  let total = 0;
  if (!value) throw new Error(`${path}: empty duration`);
  while (i < value.length) {
    PART.lastIndex = i;
    const m = PART.exec(value);
    if (!m) throw new Error(`${path}: ${JSON.stringify(value)} is not a duration such as "24h" or "1h30m"`);
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    i = PART.lastIndex;
  }
  return total;
}
