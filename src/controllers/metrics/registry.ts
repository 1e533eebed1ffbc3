/**
 * A component's own prom-client Registry, its metrics created from the catalog (never
 * prom-client's global default registry, so two components in one process, as in local
 * mode, keep separate metrics). Collectors set values from a snapshot taken per scrape:
 * `reset()` then set, so a VMI that is gone leaves no stale series.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { COMMON_METRICS, type MetricDef, metricDef } from './catalog';

/** Version reported by kubevirt_info's `kubeversion` label. */
export const KUBEVIRT_TS_VERSION = '0.1.0';

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;

/** Label values by label name. */
export type Labels = Record<string, string>;

/** A registry and its metrics by name. */
export class ComponentRegistry {
  readonly registry = new Registry();
  private readonly metrics = new Map<string, AnyMetric>();

  /** Creates the catalog's metrics `names` plus kubevirt_info (set once). */
  constructor(names: readonly string[]) {
    for (const d of [...COMMON_METRICS, ...names.map(metricDef)]) this.create(d);
    this.gauge('kubevirt_info').set(
      { goversion: `node${process.versions.node}`, kubeversion: `v${KUBEVIRT_TS_VERSION}` },
      1,
    );
  }

  private create(d: MetricDef): void {
    if (this.metrics.has(d.name)) return;
    const cfg = { name: d.name, help: d.help, labelNames: [...d.labels], registers: [this.registry] };
    const m =
      d.type === 'counter' ? new Counter(cfg) : d.type === 'gauge' ? new Gauge(cfg) : new Histogram(cfg);
    this.metrics.set(d.name, m);
  }

  private get(name: string, type: string): AnyMetric {
    const m = this.metrics.get(name);
    if (!m) throw new Error(`metric ${name} is not registered here`);
    if (metricDef(name).type !== type) throw new Error(`metric ${name} is not a ${type}`);
    return m;
  }

  gauge(name: string): Gauge<string> {
    return this.get(name, 'gauge') as Gauge<string>;
  }
  counter(name: string): Counter<string> {
    return this.get(name, 'counter') as Counter<string>;
  }
  histogram(name: string): Histogram<string> {
    return this.get(name, 'histogram') as Histogram<string>;
  }

  /** Sets a counter or gauge from a snapshot value (counters: reset first, then this). */
  setSnapshot(name: string, labels: Labels, value: number): void {
    const m = this.metrics.get(name);
    if (m instanceof Gauge) m.set(labels, value);
    else if (m instanceof Counter) m.inc(labels, Math.max(0, value));
    else throw new Error(`metric ${name} cannot be set from a snapshot`);
  }

  /** Clears the series of the metrics `names` (before setting a new snapshot). */
  reset(names: Iterable<string>): void {
    for (const n of names) this.metrics.get(n)?.reset();
  }

  /** The text exposition format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
