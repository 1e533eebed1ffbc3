/**
 * virt-handler's metrics: per-VMI domain statistics gathered on scrape from each running
 * launcher (GetDomainStats, answered from libvirt's bulk stats), all launchers asked at
 * once and the scrape given up on at its deadline; a launcher that errs or is late adds
 * to the scrape-errors counter and its VMI is left out of that scrape. Nothing here runs
 * on the handler's reconcile path. Scrapes that arrive while a collection runs share it
 * (one GetDomainStats per launcher however many scrapers there are), and each record's
 * loops are bounded by its VMI's spec ({@link StatsTarget.limits}), not by the counts the
 * launcher reports.
 */
import { HANDLER_METRICS } from './catalog';
import { baseLabels, type DomainSnapshot, renderDomainFamilies } from './domain-exposition';
import { domainSamples, type StatsLimits, type StatsParams } from './domain-stats';
import { ComponentRegistry } from './registry';
import type { MetricsSource } from './server';

/** A running VMI whose launcher can be asked for stats. */
export interface StatsTarget {
  namespace: string;
  name: string;
  node: string;
  /** The guest's tap devices' VMI interface names (upstream labels NICs by alias). */
  interfaces?: Record<string, string>;
  /** The VMI spec's vCPU, interface and disk counts (default: the ceilings of ./domain-stats). */
  limits?: StatsLimits;
  /** The launcher's GetDomainStats answer (`{..., params}`), undefined when it has no domain. */
  stats(): Promise<unknown>;
}

/** Options of {@link HandlerMetrics}. */
export interface HandlerMetricsOptions {
  /** The VMIs running on this node now. */
  targets: () => StatsTarget[];
  /** Whether the handler is ready (informers synced, notify socket served). */
  ready: () => boolean;
}

const ERRORS = 'kubevirt_ts_virt_handler_domainstats_scrape_errors_total';
const DURATION = 'kubevirt_ts_virt_handler_domainstats_scrape_duration_seconds';

/**
 * The handler's registry (its own metrics) and collector; the per-VMI domain families are
 * kept as the last scrape's samples and rendered by {@link renderDomainFamilies}.
 */
export class HandlerMetrics implements MetricsSource {
  readonly metrics = new ComponentRegistry(HANDLER_METRICS.map((m) => m.name));
  private snapshots: DomainSnapshot[] = [];
  private inflight: Promise<void> | undefined;

  constructor(private readonly o: HandlerMetricsOptions) {}

  /**
   * Refreshes the snapshot; a scrape that comes while another's collection runs waits for
   * that one (its deadline is no later than this scrape's would be: the same budget,
   * started earlier) instead of asking every launcher again.
   */
  collect(deadline: number): Promise<void> {
    if (!this.inflight) {
      this.inflight = this.collectOnce(deadline).finally(() => {
        this.inflight = undefined;
      });
    }
    return this.inflight;
  }

  private async collectOnce(deadline: number): Promise<void> {
    const started = performance.now();
    const m = this.metrics;
    m.gauge('kubevirt_virt_handler_ready_status').set(this.o.ready() ? 1 : 0);
    const targets = this.o.targets();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), Math.max(0, deadline - Date.now()));
    });
    const results = await Promise.all(
      targets.map((t) =>
        Promise.race([
          t.stats().then(
            (v) => ({ ok: true as const, v }),
            (e: Error) => ({ ok: false as const, e }),
          ),
          late,
        ]),
      ),
    );
    clearTimeout(timer);
    const snapshots: DomainSnapshot[] = [];
    for (const [i, r] of results.entries()) {
      const t = targets[i];
      if (r === 'late') {
        m.counter(ERRORS).inc({ reason: 'timeout' });
        continue;
      }
      if (!r.ok) {
        m.counter(ERRORS).inc({ reason: 'launcher' });
        continue;
      }
      const params = (r.v as { params?: StatsParams } | undefined)?.params;
      if (!params) continue;
      snapshots.push({
        base: baseLabels(t.node, t.namespace, t.name),
        samples: domainSamples(params, t.interfaces, t.limits),
      });
    }
    this.snapshots = snapshots;
    m.gauge(DURATION).set((performance.now() - started) / 1000);
  }

  async text(): Promise<string> {
    return (await this.metrics.text()) + renderDomainFamilies(this.snapshots);
  }
}
