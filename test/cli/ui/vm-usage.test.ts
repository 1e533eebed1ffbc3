/**
 * The VM page's usage figures: one VMI's sums out of a virt-handler scrape (other VMIs and
 * namespaces ignored), rates between samples (none across a counter reset), one shared
 * scrape per interval, the 10-minute window; and the Prometheus source's range queries
 * against a server answering Prometheus's HTTP API (guest memory where the balloon reports
 * it, QEMU's resident size where not, errors passed on).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrometheusUsageSource } from '../../../src/cli/ui/prometheus-usage';
import { ScrapeUsageSource, sampleOf } from '../../../src/cli/ui/vm-usage';

/** A virt-handler scrape: VMI default/vm1 with two NICs and two drives, and another VMI. */
const scrape = (cpu: number, rx: number, read: number) => `# TYPE kubevirt_vmi_cpu_usage_seconds_total counter
kubevirt_vmi_cpu_usage_seconds_total{node="n",namespace="default",name="vm1"} ${cpu}
kubevirt_vmi_cpu_usage_seconds_total{node="n",namespace="other",name="vm1"} 999
# TYPE kubevirt_vmi_memory_resident_bytes gauge
kubevirt_vmi_memory_resident_bytes{node="n",namespace="default",name="vm1"} 209715200
# TYPE kubevirt_vmi_network_receive_bytes_total counter
kubevirt_vmi_network_receive_bytes_total{node="n",namespace="default",name="vm1",interface="default"} ${rx}
kubevirt_vmi_network_receive_bytes_total{node="n",namespace="default",name="vm1",interface="net2"} ${rx}
# TYPE kubevirt_vmi_storage_read_traffic_bytes_total counter
kubevirt_vmi_storage_read_traffic_bytes_total{node="n",namespace="default",name="vm1",drive="vda"} ${read}
kubevirt_vmi_storage_read_traffic_bytes_total{node="n",namespace="default",name="vm2",drive="vda"} 5
`;

describe('usage from virt-handler scrapes', () => {
  it("sums one VMI's series and falls back to QEMU's resident size without balloon figures", () => {
    const s = sampleOf(scrape(12.5, 100, 4096), 'default', 'vm1', 1000);
    expect(s).toEqual({
      t: 1000,
      cpuSeconds: 12.5,
      rx: 200,
      tx: undefined,
      read: 4096,
      write: undefined,
      memoryBytes: 209715200,
      memory: 'resident',
    });
    const guest = `${scrape(1, 1, 1)}kubevirt_vmi_memory_available_bytes{namespace="default",name="vm1"} 1000
kubevirt_vmi_memory_usable_bytes{namespace="default",name="vm1"} 300
`;
    expect(sampleOf(guest, 'default', 'vm1', 0)).toMatchObject({ memoryBytes: 700, memory: 'guest' });
    expect(sampleOf(scrape(1, 1, 1), 'default', 'absent', 0)).toBeUndefined();
  });

  it('computes rates between samples, shares one scrape per interval, skips a reset and keeps 10 minutes', async () => {
    let now = 0;
    const texts = [scrape(10, 0, 0), scrape(12, 4000, 8192), scrape(1, 4000, 8192), scrape(3, 4000, 8192)];
    let scrapes = 0;
    const src = new ScrapeUsageSource(
      async () => texts[scrapes++],
      2_000,
      () => now,
    );
    expect((await src.series('default', 'vm1')).points).toEqual([]);
    now = 1_000; // within the interval: the same scrape, no second sample
    expect((await src.series('default', 'vm1')).points).toEqual([]);
    expect(scrapes).toBe(1);
    now = 4_000;
    const two = await src.series('default', 'vm1');
    expect(two.source).toBe('virt-handler');
    expect(two.points).toEqual([
      {
        t: 4_000,
        cpuCores: 0.5,
        memoryBytes: 209715200,
        rxBytesPerSecond: 2000,
        txBytesPerSecond: undefined,
        readBytesPerSecond: 2048,
        writeBytesPerSecond: undefined,
      },
    ]);
    now = 8_000; // the counter went down: a new VMI, no rate across it
    expect((await src.series('default', 'vm1')).points.at(-1)?.cpuCores).toBeUndefined();
    now = 4_000 + 10 * 60_000 + 1; // the samples of 0 and 4 s are outside the window, 8 s's is not
    const late = await src.series('default', 'vm1');
    expect(late.points.map((p) => p.t)).toEqual([now]);
    expect(late.points[0]?.cpuCores).toBeCloseTo(2 / 596.001, 6);
  });
});

describe('usage from Prometheus', () => {
  let server: http.Server;
  let base = '';
  const queries: string[] = [];
  let guestMemory = true;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      const q = u.searchParams.get('query') ?? '';
      queries.push(`${u.pathname} ${q} step=${u.searchParams.get('step')}`);
      if (q.includes('name="broken"')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'error', error: 'parse error at char 3' }));
        return;
      }
      const values = (v: number) => [
        [100, String(v)],
        [115, String(v * 2)],
      ];
      const answer = (v: number | undefined) =>
        JSON.stringify({
          status: 'success',
          data: { resultType: 'matrix', result: v === undefined ? [] : [{ metric: {}, values: values(v) }] },
        });
      res.writeHead(200, { 'content-type': 'application/json' });
      if (q.includes('cpu_usage')) res.end(answer(0.25));
      else if (q.includes('available_bytes')) res.end(answer(guestMemory ? 1000 : undefined));
      else if (q.includes('resident_bytes')) res.end(answer(5000));
      else if (q.includes('receive_bytes')) res.end(answer(10));
      else res.end(answer(undefined));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prom/`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('merges the range queries by time, with guest memory where the balloon reports it', async () => {
    const src = new PrometheusUsageSource(base, () => 200_000);
    const s = await src.series('default', 'vm1');
    expect(s).toEqual({
      source: 'prometheus',
      memory: 'guest',
      points: [
        { t: 100_000, cpuCores: 0.25, memoryBytes: 1000, rxBytesPerSecond: 10 },
        { t: 115_000, cpuCores: 0.5, memoryBytes: 2000, rxBytesPerSecond: 20 },
      ],
    });
    expect(queries).toContain(
      '/prom/api/v1/query_range sum(rate(kubevirt_vmi_cpu_usage_seconds_total{namespace="default",name="vm1"}[1m])) step=15',
    );
    guestMemory = false;
    const r = await src.series('default', 'vm1');
    expect(r.memory).toBe('resident');
    expect(r.points.map((p) => p.memoryBytes)).toEqual([5000, 10000]);
  });

  it("passes Prometheus's error on", async () => {
    await expect(new PrometheusUsageSource(base).series('default', 'broken')).rejects.toThrow(
      /prometheus http:\/\/127\.0\.0\.1:\d+: parse error at char 3/,
    );
  });
});
