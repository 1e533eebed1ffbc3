/**
 * Scale benchmark of the control plane (issue 29, step 1): N VirtualMachines on M
 * simulated nodes, against the real kube-apiserver (etcd, kube-scheduler and
 * kube-controller-manager from the test binaries) or the embedded store. virt-controller
 * runs in its own process; the node side (Node objects and Lease heartbeats, one real
 * virt-handler per node on the fake driver, a stand-in kubelet running each launcher
 * in-process on that driver) in another. Prints the BENCH line and virt-controller's
 * requests per VM (BENCH scale-requests); then restarts virt-controller with everything
 * settled and counts what the new one writes (BENCH scale-restart: should be 0); then
 * deletes everything and reports how long that took and what was left (BENCH scale-delete).
 *
 *   npm run bench:scale -- --vms N --nodes M --backend apiserver|embedded [--timeout S] [--cpu-prof DIR]
 *     [--controller-qps Q]  (virt-controller's client limit: Q and burst 2Q; default upstream's 200/400 on
 *       apiserver, none (Infinity) on embedded: see bench/scale/connect.ts UNLIMITED)
 *     [--workers W]  (every virt-controller controller's workers; unset: upstream's per-controller counts)
 */
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { socketLinkRoot } from '../src/controllers/launcher-protocol/short-dir';
import { type Backend, type BackendKind, startBackend } from './scale/backend';
import { cpuSeconds, hostCpu, type Part, requestCounts, rssMb, startPart, stopPart } from './scale/proc';
import { byClientset, diffCounts, perVm, requestTotal, writeTotal } from './scale/request-count';
import { restartController } from './scale/restart';
import { benchLine, percentile } from './scale/stats';
import { createVms, deleteAll, RunningWatch } from './scale/workload';

const { values } = parseArgs({
  options: {
    vms: { type: 'string', default: '500' },
    nodes: { type: 'string' },
    backend: { type: 'string', default: 'apiserver' },
    timeout: { type: 'string', default: '300' },
    'cpu-prof': { type: 'string' },
    'controller-qps': { type: 'string' },
    workers: { type: 'string' },
  },
});
const N = Number(values.vms);
const M = Number(values.nodes ?? Math.max(1, Math.ceil(N / 100)));
const kind = values.backend as BackendKind;
if (kind !== 'apiserver' && kind !== 'embedded')
  throw new Error(`--backend: apiserver or embedded, not ${kind}`);
const timeoutMs = Number(values.timeout) * 1000;
const controllerQps = values['controller-qps'] ?? (kind === 'embedded' ? 'Infinity' : undefined);
const here = import.meta.dirname;

const workDir = mkdtempSync(join(tmpdir(), 'kvts-scale-'));
let backend: Backend | undefined;
const parts: Part[] = [];
let watch: RunningWatch | undefined;

async function cleanup(): Promise<void> {
  await watch?.stop().catch(() => undefined);
  for (const p of parts.reverse()) await stopPart(p);
  await backend?.stop().catch((e) => console.error(`stopping the backend: ${e}`));
  removeSocketLinks(workDir);
  rmSync(workDir, { recursive: true, force: true });
}

/** Removes the short socket links (launcher-protocol/short-dir) the launchers made into `dir`. */
function removeSocketLinks(dir: string): void {
  const root = socketLinkRoot();
  let names: string[] = [];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  for (const n of names) {
    try {
      if (readlinkSync(join(root, n)).startsWith(`${dir}/`)) rmSync(join(root, n), { force: true });
    } catch {
      // not a link, or gone meanwhile
    }
  }
}
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(sig, () => void cleanup().finally(() => process.exit(130)));

async function main(): Promise<number> {
  const t = performance.now();
  backend = await startBackend(kind, workDir);
  console.log(
    `${kind} backend up in ${((performance.now() - t) / 1000).toFixed(1)} s; VMI writes counted by ${backend.writesCountedBy}`,
  );
  const profFlags = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${resolve(values['cpu-prof'])}`] : [];
  const qpsArgs = [
    ...(controllerQps ? ['--qps', controllerQps] : []),
    ...(values.workers ? ['--workers', values.workers] : []),
  ];
  const startController = (name: string) =>
    startPart(
      name,
      join(here, 'scale', 'controller-main.ts'),
      [...backend!.connectArgs, ...qpsArgs],
      profFlags,
    );
  let controller = await startController('controller');
  parts.push(controller);
  // Each in-process launcher holds ~10 file descriptors: at most 1,000 per process.
  const procs = Math.min(M, Math.max(1, Math.ceil(N / 1000)));
  const started: Array<Promise<Part>> = [];
  for (let p = 0; p < procs; p++) {
    const first = Math.floor((p * M) / procs);
    const count = Math.floor(((p + 1) * M) / procs) - first;
    const nodeArgs = [
      ...backend.connectArgs,
      ...['--first', String(first), '--nodes', String(count), '--total', String(M)],
      ...['--pods-per-node', String(Math.ceil(N / M) + 10), '--root', join(workDir, 'nodes')],
      ...(kind === 'embedded' && p === 0 ? ['--bind'] : []),
    ];
    started.push(startPart(`nodes${p}`, join(here, 'scale', 'node-main.ts'), nodeArgs));
  }
  const settled = await Promise.allSettled(started);
  for (const r of settled) if (r.status === 'fulfilled') parts.push(r.value);
  for (const r of settled) if (r.status === 'rejected') throw r.reason;
  watch = new RunningWatch(backend.client);
  await watch.start();
  console.log(`${M} nodes with handlers up in ${procs} process(es); creating ${N} VMs`);

  // CPU seconds per part over create -> all Running, beside the whole host's (other
  // sessions included): what the host had to give, and who took it.
  const cpuOf = () => ({
    controller: cpuSeconds(controller.proc.pid),
    nodes: parts.filter((p) => p.name.startsWith('nodes')).reduce((a, p) => a + cpuSeconds(p.proc.pid), 0),
    api: cpuSeconds(backend!.apiserverPid),
    host: hostCpu(),
  });
  const cpu0 = cpuOf();
  const w0 = await backend.vmiWrites();
  const c0 = await requestCounts(controller);
  const t0 = performance.now();
  const created = await createVms(backend.client, N);
  console.log(`create calls done after ${((performance.now() - t0) / 1000).toFixed(2)} s`);
  const ok = await watch.waitFor(N, timeoutMs);
  const tAll = performance.now();
  const cpu1 = cpuOf();
  const ctrlMem = rssMb(controller.proc.pid);
  const apiMem = backend.apiserverRss();
  if (!ok) console.log(`only ${watch.runningAt.size}/${N} VMIs Running after ${values.timeout} s`);
  // Writes that follow Running (conditions settling) belong to the VMI too.
  await new Promise((r) => setTimeout(r, 5000));
  const writes = (await backend.vmiWrites()) - w0;
  // What virt-controller asked of the API per VM, from before the creates to here.
  const toRunning = diffCounts(c0, await requestCounts(controller));
  const reqs = requestTotal(toRunning);
  console.log(`controller requests per VM, create to Running + 5 s: ${perVm(toRunning, N)}`);
  const lat = [...watch.runningAt.entries()]
    .map(([n, at]) => at - (created.get(n) ?? t0))
    .sort((a, b) => a - b);
  console.log(
    `controller rss ${ctrlMem.rss.toFixed(0)} MiB (peak ${ctrlMem.peak.toFixed(0)}), api server rss ${apiMem.rss.toFixed(0)} MiB (peak ${apiMem.peak.toFixed(0)}); ${writes} VMI writes; p99 ${percentile(lat, 99).toFixed(0)} ms, max ${(lat.at(-1) ?? 0).toFixed(0)} ms`,
  );
  // Where the time goes, per VMI: p50/p95 of each step's end minus the previous step's.
  const steps: Array<[string, Map<string, number>]> = [
    ['created', created],
    ['pod seen', watch.podSeenAt],
    ['pod Running', watch.podRunningAt],
    ['VMI Scheduled', watch.scheduledAt],
    ['VMI Running', watch.runningAt],
  ];
  const spans = steps.slice(1).map(([name, to], i) => {
    const from = steps[i][1];
    const d = [...to.entries()]
      .filter(([n]) => from.has(n))
      .map(([n, at]) => at - (from.get(n) ?? at))
      .sort((a, b) => a - b);
    return `${steps[i][0]}->${name} p50 ${percentile(d, 50).toFixed(0)} p95 ${percentile(d, 95).toFixed(0)} ms`;
  });
  console.log(`steps: ${spans.join('; ')}`);
  const hostBusy = cpu1.host.busy - cpu0.host.busy;
  const hostTotal = cpu1.host.total - cpu0.host.total;
  console.log(
    `BENCH scale-cpu vms=${N} backend=${kind} wall_s=${((tAll - t0) / 1000).toFixed(1)} controller_cpu_s=${(cpu1.controller - cpu0.controller).toFixed(1)} nodes_cpu_s=${(cpu1.nodes - cpu0.nodes).toFixed(1)} ${kind === 'embedded' ? 'store' : 'apiserver'}_cpu_s=${(cpu1.api - cpu0.api).toFixed(1)} host_busy_cpu_s=${hostBusy.toFixed(1)} host_cpu_s=${hostTotal.toFixed(1)}`,
  );
  console.log(
    benchLine({
      vms: N,
      backend: kind,
      nodes: M,
      allRunningS: ok ? (tAll - t0) / 1000 : Number.NaN,
      p50Ms: percentile(lat, 50),
      p95Ms: percentile(lat, 95),
      writesPerVmi: writes / N,
      controllerRssMb: ctrlMem.rss,
      apiserverRssMb: apiMem.rss,
      controllerQps: Number(controllerQps ?? 200),
    }),
  );
  // Per clientset: each has its own QPS/burst, so the busiest one bounds the pace.
  const perSet = Object.entries(byClientset(toRunning))
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => ` ${k.replaceAll(/[^a-z0-9]+/g, '_')}_per_vm=${(v / N).toFixed(2)}`)
    .join('');
  console.log(
    `BENCH scale-requests vms=${N} backend=${kind} controller_requests_per_vm=${(reqs / N).toFixed(2)} controller_writes_per_vm=${(writeTotal(toRunning) / N).toFixed(2)}${perSet}`,
  );

  // A virt-controller restart with everything settled: it should write nothing.
  const restart = await restartController(
    controller,
    () => startController('controller2'),
    () => backend!.vmiWrites(),
  );
  parts[parts.indexOf(controller)] = restart.part;
  controller = restart.part;
  const restartMem = rssMb(controller.proc.pid);
  console.log(
    `restart: the old controller's last request ${restart.settleSeconds.toFixed(1)} s after the wait began; the new one's ${restart.resyncSeconds.toFixed(1)} s after the old one's stop; its requests: ${JSON.stringify(restart.counts)}`,
  );
  console.log(
    `BENCH scale-restart vms=${N} backend=${kind} resync_s=${restart.resyncSeconds.toFixed(1)} controller_writes=${restart.writes} vmi_writes=${restart.vmiWrites} controller_rss_mb=${restartMem.rss.toFixed(0)}`,
  );

  const cDel = await requestCounts(controller);
  const del = await deleteAll(backend.client, watch, N, timeoutMs);
  console.log(
    del.seconds !== undefined
      ? `delete: all ${N} VMs, their VMIs and launcher pods gone after ${del.seconds.toFixed(2)} s`
      : `delete: still left after ${values.timeout} s: ${JSON.stringify(del.left)}`,
  );
  console.log(
    `controller requests per VM, delete: ${perVm(diffCounts(cDel, await requestCounts(controller)), N)}`,
  );
  const left = Object.entries(del.left)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  console.log(
    `BENCH scale-delete vms=${N} backend=${kind} delete_s=${del.seconds?.toFixed(2) ?? 'NaN'} left_${left.replaceAll(' ', ' left_')}`,
  );
  return ok && del.seconds !== undefined && restart.writes === 0 ? 0 : 1;
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (err) => {
    console.error(err);
    await cleanup();
    process.exit(1);
  });
