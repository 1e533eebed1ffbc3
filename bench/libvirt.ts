/**
 * Benchmark of the pure-TypeScript libvirt client against the real daemon:
 * - pipelined calls: many domain lookups in flight on one connection to `test:///default`;
 * - define+start latency of a tiny diskless TCG domain under `qemu:///system`.
 * Ends with `BENCH libvirt pipelined_calls=<n>/s define_start_ms=<n>`.
 */
import { performance } from 'node:perf_hooks';
import { LibvirtClient } from '../src/drivers/libvirt';

const TOTAL_CALLS = Number(process.env.BENCH_LIBVIRT_CALLS ?? 50_000);
const WINDOW = Number(process.env.BENCH_LIBVIRT_WINDOW ?? 256);
const DEFINE_START_RUNS = Number(process.env.BENCH_LIBVIRT_RUNS ?? 3);

// test:///default is shared by everything on the daemon: look up a domain of our own.
const LOOKUP_NAME = `kvts-test-libvirt-bench-lookup-${process.pid}`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Keeps `window` lookups in flight until `total` have completed; returns calls/s and client CPU/call. */
async function pipelined(
  c: LibvirtClient,
  total: number,
  window: number,
): Promise<{ rate: number; cpuUs: number }> {
  let issued = 0;
  let done = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const issue = () => {
      while (issued < total && issued - done < window) {
        issued++;
        c.domainLookupByName(LOOKUP_NAME).then(() => {
          done++;
          if (done === total) resolve();
          else issue();
        }, reject);
      }
    };
    issue();
  });
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { rate: total / (wallMs / 1000), cpuUs: (cpu.user + cpu.system) / total };
}

async function defineStart(c: LibvirtClient, run: number): Promise<number> {
  const name = `kvts-test-libvirt-bench-${process.pid}-${run}`;
  const xml = `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`;
  const t0 = performance.now();
  const dom = await c.domainDefineXML(xml);
  try {
    await c.domainCreate(dom);
    const ms = performance.now() - t0;
    await c.domainDestroy(dom);
    return ms;
  } finally {
    await c.domainUndefine(dom).catch(() => {});
  }
}

const test = await LibvirtClient.connect({ uri: 'test:///default' });
const lookupDom = await test.domainDefineXML(
  `<domain type='test'><name>${LOOKUP_NAME}</name><memory unit='MiB'>32</memory><os><type>hvm</type></os></domain>`,
);
await pipelined(test, 2000, WINDOW); // warm-up
const rates: number[] = [];
for (let i = 0; i < 5; i++) {
  const r = await pipelined(test, TOTAL_CALLS, WINDOW);
  rates.push(r.rate);
  // Client CPU per call shows how much of the limit is this client vs the daemon.
  console.log(
    `pipelined lookups on test:///default: ${TOTAL_CALLS} calls, window ${WINDOW}: ${Math.round(r.rate)}/s (client CPU ${r.cpuUs.toFixed(1)} us/call)`,
  );
}
// Sequential latency for comparison (one call in flight at a time).
const seqT0 = performance.now();
for (let i = 0; i < 2000; i++) await test.domainLookupByName(LOOKUP_NAME);
console.log(`sequential lookups: ${Math.round(2000 / ((performance.now() - seqT0) / 1000))}/s`);
await test.domainUndefine(lookupDom);
await test.close();

const qemu = await LibvirtClient.connect({ uri: 'qemu:///system' });
const times: number[] = [];
for (let i = 0; i < DEFINE_START_RUNS; i++) {
  const ms = await defineStart(qemu, i);
  times.push(ms);
  console.log(`define+start of a tiny TCG domain on qemu:///system: ${ms.toFixed(1)} ms`);
}
await qemu.close();

const rate = Math.round(median(rates));
const ds = Math.round(median(times));
console.log(`BENCH libvirt pipelined_calls=${rate}/s define_start_ms=${ds}`);
