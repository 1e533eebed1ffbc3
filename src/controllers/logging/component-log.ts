/**
 * A component's log as the processes use it: the pino logger of logger.ts, a plain
 * `(message) => void` for the parts that take one, and verbosity that follows upstream:
 * `--v` at start, then the KubeVirt resource's `developerConfiguration.logVerbosity` for
 * the component (for virt-handler, `nodeVerbosity[node]` first) while it sets one; when
 * the resource drops it, back to `--v`.
 */
import type { DestinationStream, Logger } from 'pino';
import type { KubeVirtConfiguration } from '../../api/generated/types';
import { setRuntimeLog } from '../runtime/runtime-log';
import { componentLogger, levelForVerbosity, vmiFields } from './logger';

/** The components with a logVerbosity field of their own in the KubeVirt resource. */
export type LoggingComponent =
  | 'virt-api'
  | 'virt-controller'
  | 'virt-handler'
  | 'virt-launcher'
  | 'virt-operator';

const CR_FIELD = {
  'virt-api': 'virtAPI',
  'virt-controller': 'virtController',
  'virt-handler': 'virtHandler',
  'virt-launcher': 'virtLauncher',
  'virt-operator': 'virtOperator',
} as const;

/** `--v`'s value checked: a whole number 0 or more; the error names the flag. */
export function parseVerbosity(value: string | number, flag = '--v'): number {
  const s = String(value);
  if (!/^\d{1,3}$/.test(s))
    throw new Error(`${flag}: ${JSON.stringify(value)} is not a verbosity (0 or more)`);
  return Number(s);
}

/** The verbosity the KubeVirt resource sets for `component` (on `node`), if any. */
export function configuredVerbosity(
  configuration: KubeVirtConfiguration | undefined,
  component: LoggingComponent,
  node?: string,
): number | undefined {
  const lv = configuration?.developerConfiguration?.logVerbosity;
  if (!lv) return undefined;
  const perNode = component === 'virt-handler' && node ? lv.nodeVerbosity?.[node] : undefined;
  const v = perNode ?? lv[CR_FIELD[component]];
  // Validation refuses bad values; a 0 is upstream's "unset".
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}

/** A component's JSON log with upstream's verbosity handling. */
export class ComponentLog {
  readonly logger: Logger;
  private verbosity: number;

  constructor(
    readonly component: LoggingComponent | string,
    private readonly flagVerbosity = 2,
    dest?: DestinationStream,
  ) {
    this.verbosity = flagVerbosity;
    this.logger = componentLogger(component, flagVerbosity, dest);
  }

  /** Sends the reconcile runtime's warnings (informers, controllers) to this log as JSON lines. */
  captureRuntime(): this {
    setRuntimeLog({ warn: (m) => this.logger.warn(m), error: (m) => this.logger.error(m) });
    return this;
  }

  /** The verbosity in force (`--v`, or the resource's). */
  get v(): number {
    return this.verbosity;
  }

  /** An info line (for the parts that take a `(message) => void`). */
  readonly line = (message: string): void => {
    this.logger.info(message);
  };

  /** A `(message) => void` whose lines carry `fields` (e.g. a sub-part's name). */
  lineWith(fields: Record<string, unknown>): (message: string) => void {
    const child = this.logger.child(fields);
    return (m) => child.info(m);
  }

  /** A child logger for lines about one VMI (kind, namespace, name, uid). */
  forVmi(vmi: { metadata?: { namespace?: string; name?: string; uid?: string } }): Logger {
    return this.logger.child(vmiFields(vmi));
  }

  /** Takes the resource's verbosity for this component, or falls back to `--v`. */
  followConfig(configuration: KubeVirtConfiguration | undefined, node?: string): void {
    const v =
      configuredVerbosity(configuration, this.component as LoggingComponent, node) ?? this.flagVerbosity;
    if (v === this.verbosity) return;
    this.verbosity = v;
    this.logger.level = levelForVerbosity(v);
    this.logger.info({ verbosity: v }, 'log verbosity changed');
  }
}
