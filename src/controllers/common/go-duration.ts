/**
 * Go's `time.Duration` text (what `metav1.Duration` marshals to JSON: `5m0s`, `1h30m`,
 * `300ms`, `1.5h`), parsed as Go's time.ParseDuration reads it. Upstream's API carries
 * durations this way (e.g. FreezeUnfreezeTimeout.unfreezeTimeout).
 */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Milliseconds of a Go duration string; throws naming `field` when it is not one. */
export function parseGoDuration(text: unknown, field: string): number {
  if (typeof text !== 'string') {
    throw new Error(`${field}: ${JSON.stringify(text)} is not a duration string (e.g. "5m0s")`);
  }
  const bad = () =>
    new Error(`${field}: ${JSON.stringify(text.slice(0, 64))} is not a duration (e.g. "5m0s", "300s")`);
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s[0] === '-' ? -1 : 1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw bad();
  let total = 0;
  const re = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  while (s.length > 0) {
    const m = re.exec(s);
    if (!m) throw bad();
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
    s = s.slice(m[0].length);
  }
  return sign * total;
}
