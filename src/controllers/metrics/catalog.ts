/**
 * Every metric kubevirt-ts serves: upstream KubeVirt's name, type, help and labels
 * (docs/observability/metrics.md and pkg/monitoring/metrics), per component. The
 * collectors create their prom-client metrics from here, `scripts/gen-metrics-docs.ts`
 * renders docs/metrics.md from it and a test checks a scrape against it, so the three
 * cannot drift apart.
 */

/** Prometheus metric type. */
export type MetricType = 'counter' | 'gauge' | 'histogram';

import { CONTROLLER_METRICS } from './controller-catalog';
import { HANDLER_DOMAIN_METRICS, HANDLER_METRICS } from './handler-catalog';

export { CONTROLLER_METRICS, HANDLER_DOMAIN_METRICS, HANDLER_METRICS };

/** One served metric. */
export interface MetricDef {
  name: string;
  type: MetricType;
  help: string;
  labels: readonly string[];
  component: 'virt-handler' | 'virt-controller' | 'all';
  /** True for metrics of kubevirt-ts's own that upstream does not have. */
  own?: boolean;
}

/** Served by every component. */
export const COMMON_METRICS: readonly MetricDef[] = [
  {
    name: 'kubevirt_info',
    type: 'gauge',
    help: 'Version information.',
    labels: ['goversion', 'kubeversion'],
    component: 'all',
  },
];

/** Every served metric. */
export const ALL_METRICS: readonly MetricDef[] = [
  ...COMMON_METRICS,
  ...HANDLER_METRICS,
  ...HANDLER_DOMAIN_METRICS,
  ...CONTROLLER_METRICS,
];

/** The catalog entry of `name`; throws for a name that is not in it (a programming error). */
export function metricDef(name: string): MetricDef {
  const d = ALL_METRICS.find((m) => m.name === name);
  if (!d) throw new Error(`metric ${name} is not in the catalog (src/controllers/metrics/catalog.ts)`);
  return d;
}
