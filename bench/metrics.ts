/**
 * bench:metrics — virt-handler /metrics scrapes with 20 running guests, handler side:
 * 20 scripted launchers (in-process, answering at once with a stats record shaped like
 * libvirt's for the tiny guest plus one NIC: 1 vCPU, balloon, 1 drive, 1 interface), so the
 * figure is the handler's collection, sample mapping and text exposition, without the
 * launchers' gRPC round trips or libvirt's own time.
 *
 * The RSS delta is what the 20 guests add to a handler whose metrics server is already up
 * and warmed: the server is started and scraped (1 guest, then none) before the baseline is
 * taken, then 20 guests are scraped 100 times. Both readings follow a full GC. Scrapes go
 * over node:http with the body counted and dropped, as Prometheus (another process) would
 * read it: an in-process `fetch` would load undici and keep its buffers in this process,
 * which the handler never does. Also printed: the live heap and V8's young generation,
 * where a scrape's garbage shows.
 */
import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HandlerMetrics, type StatsTarget } from '../src/controllers/metrics/handler-metrics';
import { serveMetrics } from '../src/controllers/metrics/server';
import { median } from './memory';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const MIB = 1024 * 1024;

/** RSS, live heap and young generation size in MiB, after a full GC. */
function memory(): { rss: number; heap: number; young: number } {
  gc();
  gc();
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  const young = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
  return {
    rss: m ? Number(m[1]) / 1024 : Number.NaN,
    heap: process.memoryUsage().heapUsed / MIB,
    young: young / MIB,
  };
}

/** A stats record like the launcher's for a running tiny guest, varied per guest and call. */
function params(i: number, n: number): Record<string, number | string> {
  return {
    'cpu.time': 1e9 * (i + n),
    'cpu.user': 5e8 * (i + n),
    'cpu.system': 2e8 * (i + n),
    'vcpu.current': 1,
    'vcpu.maximum': 1,
    'vcpu.0.state': 1,
    'vcpu.0.time': 9e8 * (i + n),
    'vcpu.0.wait': 1e6 * n,
    'vcpu.0.delay': 2e6 * n,
    'balloon.current': 131072,
    'balloon.maximum': 131072,
    'balloon.rss': 200_000 + i,
    'net.count': 1,
    'net.0.name': 'tap0',
    'net.0.rx.bytes': 1000 * n,
    'net.0.rx.pkts': 10 * n,
    'net.0.rx.errs': 0,
    'net.0.rx.drop': 0,
    'net.0.tx.bytes': 900 * n,
    'net.0.tx.pkts': 9 * n,
    'net.0.tx.errs': 0,
    'net.0.tx.drop': 0,
    'block.count': 1,
    'block.0.name': 'vda',
    'block.0.rd.reqs': 3 + n,
    'block.0.rd.bytes': 12288 + 4096 * n,
    'block.0.rd.times': 1e6 * n,
    'block.0.wr.reqs': n,
    'block.0.wr.bytes': 4096 * n,
    'block.0.wr.times': 1e6 * n,
    'block.0.fl.reqs': n,
    'block.0.fl.times': 1e5 * n,
  };
}

/** One GET, the body counted and dropped; resolves with its length. */
function scrapeOnce(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(`${url}/metrics`, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(bytes) : reject(new Error(`${res.statusCode}`))));
    }).on('error', reject);
  });
}

async function main(): Promise<void> {
  const guests = Number(process.env.BENCH_METRICS_GUESTS ?? 20);
  let n = 0;
  const targetsOf = (k: number): StatsTarget[] =>
    Array.from({ length: k }, (_, i) => ({
      namespace: 'default',
      name: `vm-${i}`,
      node: 'bench',
      stats: async () => ({ params: params(i, n) }),
    }));
  let targets: StatsTarget[] = [];
  const metrics = new HandlerMetrics({ targets: () => targets, ready: () => true });
  const server = await serveMetrics({ sources: [metrics] });
  const times: number[] = [];
  let bytes = 0;
  let baseline: ReturnType<typeof memory>;
  let after: ReturnType<typeof memory>;
  try {
    // Warm-up: the server, the collector and the exposition code loaded and compiled.
    targets = targetsOf(1);
    for (let j = 0; j < 50; j++, n++) await scrapeOnce(server.url);
    targets = [];
    for (let j = 0; j < 50; j++, n++) await scrapeOnce(server.url);
    baseline = memory();
    targets = targetsOf(guests);
    for (let j = 0; j < 100; j++, n++) {
      const t0 = performance.now();
      bytes = await scrapeOnce(server.url);
      times.push(performance.now() - t0);
    }
    after = memory();
  } finally {
    await server.close();
  }
  const cpu = process.cpuUsage();
  console.log(
    `${guests} scripted guests, ${times.length} scrapes, body ${bytes} bytes; process CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s`,
  );
  console.log(
    `warmed baseline: RSS ${baseline.rss.toFixed(1)} MiB, live heap ${baseline.heap.toFixed(1)} MiB, young generation ${baseline.young.toFixed(0)} MiB; ` +
      `after: RSS ${after.rss.toFixed(1)} MiB, live heap ${after.heap.toFixed(1)} MiB, young generation ${after.young.toFixed(0)} MiB`,
  );
  console.log(
    `BENCH metrics scrape_ms_${guests}=${median(times).toFixed(2)} handler_rss_delta_mib=${(after.rss - baseline.rss).toFixed(1)} handler_heap_delta_mib=${(after.heap - baseline.heap).toFixed(2)}`,
  );
}

await main();
