/**
 * Structured JSON logs (pino) for the components, as upstream's JSON log lines: one
 * object per line with `component`, `level`, `msg`, and, where a VMI is concerned, its
 * `kind`, `namespace`, `name` and `uid`. Verbosity follows upstream's `--v` (klog levels):
 * up to 2 is info (upstream's default is 2), 3-4 debug, 5 and more trace; warnings and
 * errors are always written.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

/** pino's level for upstream's `--v` verbosity. */
export function levelForVerbosity(v: number): 'info' | 'debug' | 'trace' {
  if (!Number.isInteger(v) || v < 0)
    throw new Error(`--v: ${JSON.stringify(v)} is not a verbosity (0 or more)`);
  return v <= 2 ? 'info' : v <= 4 ? 'debug' : 'trace';
}

/** A component's logger writing JSON lines to `dest` (default stderr). */
export function componentLogger(component: string, verbosity = 2, dest?: DestinationStream): Logger {
  return pino(
    {
      level: levelForVerbosity(verbosity),
      base: { component },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    dest ?? pino.destination(2),
  );
}

/** The fields naming a VMI on its log lines (upstream's object keys). */
export function vmiFields(vmi: { metadata?: { namespace?: string; name?: string; uid?: string } }): {
  kind: 'VirtualMachineInstance';
  namespace?: string;
  name?: string;
  uid?: string;
} {
  const m = vmi.metadata ?? {};
  return { kind: 'VirtualMachineInstance', namespace: m.namespace, name: m.name, uid: m.uid };
}
