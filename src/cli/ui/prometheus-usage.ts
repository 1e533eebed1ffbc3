/**
 * A VM's usage graphs from a Prometheus that scrapes virt-handler (`kubevirt-ts ui
 * --prometheus URL`): one range query per figure over the last {@link USAGE_WINDOW_MS},
 * the PromQL an operator's dashboard uses for the same upstream families.
 */
import { USAGE_WINDOW_MS, type UsagePoint, type UsageSeries, type UsageSource } from './vm-usage';

/** Seconds between points (Prometheus's `step`). */
const STEP_S = 15;

/** A PromQL string literal's content (the route admits only DNS names; escaped anyway). */
const quote = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

type Figure = Exclude<keyof UsagePoint, 't'>;

/** The queries of one VMI (`sel` is its label matchers). */
function queries(sel: string): Record<Figure | 'residentBytes', string> {
  const r = (family: string) => `sum(rate(kubevirt_vmi_${family}{${sel}}[1m]))`;
  return {
    cpuCores: r('cpu_usage_seconds_total'),
    memoryBytes: `sum(kubevirt_vmi_memory_available_bytes{${sel}} - kubevirt_vmi_memory_usable_bytes{${sel}})`,
    residentBytes: `sum(kubevirt_vmi_memory_resident_bytes{${sel}})`,
    rxBytesPerSecond: r('network_receive_bytes_total'),
    txBytesPerSecond: r('network_transmit_bytes_total'),
    readBytesPerSecond: r('storage_read_traffic_bytes_total'),
    writeBytesPerSecond: r('storage_write_traffic_bytes_total'),
  };
}

interface RangeAnswer {
  status: string;
  error?: string;
  data?: { result?: Array<{ values?: Array<[number, string]> }> };
}

/** Usage from Prometheus's HTTP API at `baseUrl` (e.g. `http://prometheus:9090`). */
export class PrometheusUsageSource implements UsageSource {
  constructor(
    private readonly baseUrl: string,
    private readonly now: () => number = Date.now,
  ) {}

  private async range(query: string, start: number, end: number): Promise<Array<[number, number]>> {
    const u = new URL(`${this.baseUrl.replace(/\/$/, '')}/api/v1/query_range`);
    u.search = new URLSearchParams({
      query,
      start: String(start / 1000),
      end: String(end / 1000),
      step: String(STEP_S),
    }).toString();
    const res = await fetch(u, { signal: AbortSignal.timeout(10_000) });
    const body = (await res
      .json()
      .catch(() => ({ status: 'error', error: `HTTP ${res.status}` }))) as RangeAnswer;
    if (body.status !== 'success')
      throw new Error(`prometheus ${u.origin}: ${body.error ?? `HTTP ${res.status}`}`);
    return (body.data?.result?.[0]?.values ?? []).map(([t, v]) => [t * 1000, Number(v)]);
  }

  async series(namespace: string, name: string): Promise<UsageSeries> {
    const end = this.now();
    const start = end - USAGE_WINDOW_MS;
    const q = queries(`namespace="${quote(namespace)}",name="${quote(name)}"`);
    const keys = Object.keys(q) as Array<keyof typeof q>;
    const answers = await Promise.all(keys.map((k) => this.range(q[k], start, end)));
    const byKey = new Map(keys.map((k, i) => [k, answers[i] as Array<[number, number]>]));
    const guest = (byKey.get('memoryBytes') ?? []).length > 0;
    const points = new Map<number, UsagePoint>();
    for (const [k, values] of byKey) {
      if (k === 'residentBytes' && guest) continue;
      const figure: Figure = k === 'residentBytes' ? 'memoryBytes' : k;
      for (const [t, v] of values) {
        const p = points.get(t) ?? { t };
        p[figure] = v;
        points.set(t, p);
      }
    }
    return {
      source: 'prometheus',
      memory: guest ? 'guest' : 'resident',
      points: [...points.values()].sort((a, b) => a.t - b.t),
    };
  }
}
