/**
 * bench:metrics — one virt-handler /metrics scrape with 20 running guests, handler side:
 * 20 scripted launchers (in-process, answering at once with a stats record shaped like
 * libvirt's for the tiny guest plus one NIC: 1 vCPU, balloon, 1 drive, 1 interface), so the
 * figure is the handler's collection, sample mapping and text exposition, without the
 * launchers' gRPC round trips or libvirt's own time. Median of 50 scrapes over HTTP, and
 * the handler process's RSS growth from before the collector existed to after them.
 */
import { readFileSync } from 'node:fs';
import { HandlerMetrics, type StatsTarget } from '../src/controllers/metrics/handler-metrics';
import { serveMetrics } from '../src/controllers/metrics/server';
import { median } from './memory';

function rssMiB(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
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

async function main(): Promise<void> {
  const guests = Number(process.env.BENCH_METRICS_GUESTS ?? 20);
  const scrapes = 50;
  global.gc?.();
  const before = rssMiB();
  let n = 0;
  const targets: StatsTarget[] = Array.from({ length: guests }, (_, i) => ({
    namespace: 'default',
    name: `vm-${i}`,
    node: 'bench',
    stats: async () => ({ params: params(i, n) }),
  }));
  const metrics = new HandlerMetrics({ targets: () => targets, ready: () => true });
  const server = await serveMetrics({ sources: [metrics] });
  const times: number[] = [];
  let bytes = 0;
  try {
    for (; n < scrapes; n++) {
      const t0 = performance.now();
      const body = await (await fetch(`${server.url}/metrics`)).text();
      times.push(performance.now() - t0);
      bytes = body.length;
    }
  } finally {
    await server.close();
  }
  const after = rssMiB();
  const cpu = process.cpuUsage();
  console.log(
    `${guests} scripted guests, ${scrapes} scrapes, last body ${bytes} bytes; process CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s`,
  );
  console.log(
    `BENCH metrics scrape_ms_${guests}=${median(times).toFixed(2)} handler_rss_delta_mib=${(after - before).toFixed(1)}`,
  );
}

await main();
