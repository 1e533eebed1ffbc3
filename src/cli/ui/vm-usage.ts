/**
 * A VM's usage over the last minutes, for the graphs of its page: CPU, memory, network
 * and disk I/O, from virt-handler's per-VMI metrics (the upstream families). Two sources:
 * virt-handler's /metrics scraped on demand (local mode, which has no Prometheus; the
 * history is what this server sampled since the VM's page was first opened), or a
 * Prometheus (`--prometheus`), whose range queries give the whole window at once.
 */
import { parseExposition } from '../../controllers/metrics/exposition';

/** One point of the graphs; a figure is absent where the source had none. */
export interface UsagePoint {
  /** Milliseconds since the epoch. */
  t: number;
  /** CPU in use, in cores (the rate of `kubevirt_vmi_cpu_usage_seconds_total`). */
  cpuCores?: number;
  /** Memory in use, bytes (see {@link UsageSeries.memory}). */
  memoryBytes?: number;
  rxBytesPerSecond?: number;
  txBytesPerSecond?: number;
  readBytesPerSecond?: number;
  writeBytesPerSecond?: number;
}

/** A VM's graphs' data. */
export interface UsageSeries {
  /** Where the figures come from: `virt-handler` or `prometheus`. */
  source: 'virt-handler' | 'prometheus';
  /**
   * What memory means: `guest` (available minus usable, as the guest's balloon driver
   * reports them) or `resident` (the QEMU process's RSS, where the guest reports nothing).
   */
  memory: 'guest' | 'resident';
  /** Oldest first, within the last {@link USAGE_WINDOW_MS}. */
  points: UsagePoint[];
}

/** Gives a VM's usage. */
export interface UsageSource {
  series(namespace: string, name: string): Promise<UsageSeries>;
}

/** How far back the graphs go. */
export const USAGE_WINDOW_MS = 10 * 60_000;

/** The cumulative figures of one scrape for one VMI. */
interface Sample {
  t: number;
  cpuSeconds?: number;
  rx?: number;
  tx?: number;
  read?: number;
  write?: number;
  memoryBytes?: number;
  memory: 'guest' | 'resident';
}

/** The samples of one scrape, parsed. */
type Samples = ReturnType<typeof parseExposition>['samples'];

/** Sums the samples of `family` for VMI `ns/name`; undefined when there are none. */
function sumOf(samples: Samples, family: string, ns: string, name: string): number | undefined {
  let sum: number | undefined;
  for (const s of samples)
    if (s.name === family && s.labels.namespace === ns && s.labels.name === name) sum = (sum ?? 0) + s.value;
  return sum;
}

/** One VMI's figures in a virt-handler scrape (its text, or its samples parsed once). */
export function sampleOf(scrape: string | Samples, ns: string, name: string, t: number): Sample | undefined {
  const samples = typeof scrape === 'string' ? parseExposition(scrape).samples : scrape;
  const f = (family: string) => sumOf(samples, `kubevirt_vmi_${family}`, ns, name);
  const cpuSeconds = f('cpu_usage_seconds_total');
  const available = f('memory_available_bytes');
  const usable = f('memory_usable_bytes');
  const resident = f('memory_resident_bytes');
  if (cpuSeconds === undefined && resident === undefined) return undefined;
  const guest = available !== undefined && usable !== undefined;
  return {
    t,
    cpuSeconds,
    rx: f('network_receive_bytes_total'),
    tx: f('network_transmit_bytes_total'),
    read: f('storage_read_traffic_bytes_total'),
    write: f('storage_write_traffic_bytes_total'),
    memoryBytes: guest ? (available as number) - (usable as number) : resident,
    memory: guest ? 'guest' : 'resident',
  };
}

/** The per-second rate of a counter between two samples; undefined across a reset (a new VMI). */
function rate(a: number | undefined, b: number | undefined, seconds: number): number | undefined {
  if (a === undefined || b === undefined || b < a || seconds <= 0) return undefined;
  return (b - a) / seconds;
}

/** The graph points of consecutive samples. */
export function pointsOf(samples: Sample[]): UsagePoint[] {
  const out: UsagePoint[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1] as Sample;
    const b = samples[i] as Sample;
    const s = (b.t - a.t) / 1000;
    out.push({
      t: b.t,
      cpuCores: rate(a.cpuSeconds, b.cpuSeconds, s),
      memoryBytes: b.memoryBytes,
      rxBytesPerSecond: rate(a.rx, b.rx, s),
      txBytesPerSecond: rate(a.tx, b.tx, s),
      readBytesPerSecond: rate(a.read, b.read, s),
      writeBytesPerSecond: rate(a.write, b.write, s),
    });
  }
  return out;
}

/**
 * Scrapes virt-handler on demand and keeps each asked-for VM's samples for the window.
 * Scrapes are shared: one per {@link ScrapeUsageSource.minIntervalMs} however many pages
 * ask. `scrape` returns the exposition text, or undefined when no handler serves one.
 */
export class ScrapeUsageSource implements UsageSource {
  private readonly history = new Map<string, Sample[]>();
  /** The last scrape, parsed once for every page that asks within the interval. */
  private last?: { t: number; samples: Promise<Samples | undefined> };

  constructor(
    private readonly scrape: () => Promise<string | undefined>,
    private readonly minIntervalMs = 2_000,
    private readonly now: () => number = Date.now,
  ) {}

  private samples(t: number): Promise<Samples | undefined> {
    if (!this.last || t - this.last.t >= this.minIntervalMs)
      this.last = {
        t,
        samples: this.scrape().then((text) => (text ? parseExposition(text).samples : undefined)),
      };
    return this.last.samples;
  }

  async series(namespace: string, name: string): Promise<UsageSeries> {
    const key = `${namespace}/${name}`;
    const t = this.now();
    const samples = await this.samples(t);
    const kept = (this.history.get(key) ?? []).filter((s) => t - s.t <= USAGE_WINDOW_MS);
    const sample = samples ? sampleOf(samples, namespace, name, this.last?.t ?? t) : undefined;
    if (sample && kept.at(-1)?.t !== sample.t) kept.push(sample);
    this.history.set(key, kept);
    return { source: 'virt-handler', memory: kept.at(-1)?.memory ?? 'resident', points: pointsOf(kept) };
  }
}
