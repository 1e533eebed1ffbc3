/**
 * Pure helpers of the scale benchmark (bench/scale.ts): percentiles, the VMI write count
 * read from kube-apiserver's `apiserver_request_total` metric, and the one BENCH line.
 */

/** The p-th percentile (nearest rank) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/**
 * The request verbs of kube-apiserver's metrics that write an existing object: PUT
 * (update, audit's "update"), PATCH, and APPLY (server-side apply).
 */
export const VMI_WRITE_VERBS = ['PUT', 'PATCH', 'APPLY'] as const;

/**
 * Sums `apiserver_request_total` samples (Prometheus text format) for `resource` whose
 * verb is one of `verbs` (any subresource, any client, any code): e.g. the PATCH and
 * PUT requests on virtualmachineinstances, status subresource included.
 */
export function requestTotal(metrics: string, resource: string, verbs: readonly string[]): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const end = line.lastIndexOf('}');
    const labels = parseLabels(line.slice('apiserver_request_total{'.length, end));
    if (labels.resource !== resource || !verbs.includes(labels.verb ?? '')) continue;
    sum += Number(line.slice(end + 1).trim());
  }
  return sum;
}

function parseLabels(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) out[m[1]] = m[2];
  return out;
}

/** The figures of one run. */
export interface ScaleResult {
  vms: number;
  backend: string;
  nodes: number;
  allRunningS: number;
  p50Ms: number;
  p95Ms: number;
  writesPerVmi: number;
  controllerRssMb: number;
  apiserverRssMb: number;
  /** virt-controller's client QPS limit (upstream's default 200; Infinity: none). */
  controllerQps: number;
}

/** The BENCH line. */
export function benchLine(r: ScaleResult): string {
  return (
    `BENCH scale vms=${r.vms} backend=${r.backend} nodes=${r.nodes} all_running_s=${r.allRunningS.toFixed(2)}` +
    ` p50_ms=${r.p50Ms.toFixed(0)} p95_ms=${r.p95Ms.toFixed(0)} writes_per_vmi=${r.writesPerVmi.toFixed(2)}` +
    ` controller_rss_mb=${r.controllerRssMb.toFixed(0)} apiserver_rss_mb=${r.apiserverRssMb.toFixed(0)}` +
    ` controller_qps=${Number.isFinite(r.controllerQps) ? r.controllerQps : 'unlimited'}`
  );
}
