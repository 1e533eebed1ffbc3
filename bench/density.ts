/**
 * `npm run bench:density` (root; the npm script takes /tmp/kvts-cluster.lock, the machine's
 * one-kubelet lock; needs `npm run build` and the images): how many tiny guests one real
 * node runs, and what each costs beyond its RAM. The one-node cluster comes up in the
 * tests' state directory with the kubelet's `maxPods` raised (`--max-pods`, default 250:
 * upstream's scale set-ups raise it, HCO to 500; a /24 gives this node 253 pod addresses),
 * kubevirt-ts is installed from the manifests (test/support/cluster-install.ts), and the
 * VM of examples/vm-tiny-containerdisk.yaml (pod network, masquerade, TCG) with
 * `--guest-memory` of RAM (default 112Mi: the tiny guest boots in bare QEMU from 100 MiB
 * and panics at 96, "System is deadlocked on memory", while unpacking its initramfs; one
 * 8 MiB step above for the launcher's devices) is started `--batch` at a time until the
 * kubelet's pod limit or the scheduler (the pods' requests against the node's allocatable
 * memory or CPU: upstream's default `cpuAllocationRatio` 10 has each tiny VMI request
 * 100m, so 2 cores hold ~17; `--cpu-allocation-ratio` sets the KubeVirt CR's, upstream's
 * CPU overcommit knob), memory (the node's MemoryPressure, or the host's MemAvailable
 * falling under `--min-available-mib`: 6 engineers share this host), a guest that does
 * not boot, the run's `--deadline-min`, or `--max-guests` stops it. A guest counts once
 * its boot marker shows on its console.
 *
 * `--max-guests` defaults to 40 on this shared 2-core, 23.5 GiB host: a launcher pod with
 * its guest holds ~250 MiB and idles at ~0.4% of a core (docs/benchmarks.md), so 40 take
 * ~10 GiB, under half the host's memory, and a sixth of a core; the boots (~15 s each, 4
 * at a time) are the CPU cost. More would eat the memory the others' runs need.
 *
 * Measured once all booted and settled (`--settle-s`):
 * - overhead per VM: the launcher pod's memory cgroup working set (usage minus inactive
 *   file pages: the kubelet's and the OOM killer's view) minus what QEMU has resident of
 *   the guest's RAM (the guest's own pages, which only grow as the guest touches them);
 *   beside it upstream's budget for the same VMI (memory-overhead.ts: 240 MiB fixed +
 *   guest memory / 512 + 8 MiB per vCPU + 8 MiB for the IO thread), and QEMU's own share
 *   (its anonymous resident memory minus the guest's resident RAM: TCG's translation
 *   cache, device state; the shared library pages its RSS also counts left out);
 * - idle CPU per VM: each launcher pod's cpuacct usage over `--idle-window-s`, as a
 *   percentage of one core, with QEMU's share (its /proc CPU time), the kubevirt
 *   components' pods and the whole host over the same window beside it.
 * Then every VM is deleted (timed until no launcher pod is left) and the cluster brought
 * down. Ends with `BENCH density guests= overhead_mib_per_vm= idle_cpu_pct_per_vm=
 * budget_mib_per_vm= qemu_overhead_mib_per_vm= idle_qemu_cpu_pct_per_vm= stop=`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg as osLoadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { down } from '../scripts/cluster/down';
import { up } from '../scripts/cluster/up';
import { bytesOf } from '../src/controllers/common/quantity';
import { memoryOverhead } from '../src/controllers/virt-controller/services/memory-overhead';
import {
  clusterUnavailableReason,
  TEST_BRIDGE,
  TEST_POD_SUBNET,
  testStateDir,
} from '../test/support/cluster';
import { componentsReady, installComponents } from '../test/support/cluster-install';
import { kubectlWith } from '../test/support/cluster-pods';
import { waitFor } from '../test/support/wait';
import { bootBatch, densityVm, type Guest, nextBatchRoom } from './density-guests';
import { cgroupCpuNs, hostBusyNs, podCpuacctCgroup, processCpuNs, processRssAnon } from './pod-cpu';
import { guestResident, podMemoryCgroup, workingSet } from './pod-memory';

const { values } = parseArgs({
  options: {
    'max-guests': { type: 'string', default: '40' },
    batch: { type: 'string', default: '4' },
    'guest-memory': { type: 'string', default: '112Mi' },
    'max-pods': { type: 'string', default: '250' },
    'min-available-mib': { type: 'string', default: '4096' },
    'idle-window-s': { type: 'string', default: '60' },
    'settle-s': { type: 'string', default: '30' },
    'boot-timeout-s': { type: 'string', default: '300' },
    'deadline-min': { type: 'string', default: '12' },
    'cpu-allocation-ratio': { type: 'string', default: '10' },
  },
});
const num = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${name} ${values[name]}: expected a whole number >= 1`);
  return n;
};
const MiB = 1024 * 1024;
const NS = 'bench-density';
const log = (m: string) =>
  process.stderr.write(`[bench:density] ${new Date().toISOString().slice(11, 19)} ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const span = (xs: number[], d = 1) => `${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)}`;

/** Memory of each guest's launcher pod, in MiB. */
function memoryOf(g: Guest, guestBytes: number) {
  const ws = workingSet(podMemoryCgroup(g.podUid)) / MiB;
  const resident = guestResident(g.qemuPid, guestBytes) / MiB;
  const qemuAnon = processRssAnon(g.qemuPid) / MiB;
  return { ws, resident, overhead: ws - resident, qemuOverhead: qemuAnon - resident };
}

/** CPU over `windowS` of each guest's pod and QEMU, the components' pods and the host, in % of a core. */
async function idleCpu(guests: Guest[], components: { name: string; uid: string }[], windowS: number) {
  const pods = guests.map((g) => podCpuacctCgroup(g.podUid));
  const comps = components.map((c) => podCpuacctCgroup(c.uid));
  const read = () => ({
    pods: pods.map(cgroupCpuNs),
    qemu: guests.map((g) => processCpuNs(g.qemuPid)),
    comps: comps.map(cgroupCpuNs),
    host: hostBusyNs(),
    t: process.hrtime.bigint(),
  });
  const a = read();
  await sleep(windowS * 1000);
  const b = read();
  const wall = Number(b.t - a.t);
  const pct = (x: number, y: number) => ((y - x) / wall) * 100;
  return {
    pod: a.pods.map((x, i) => pct(x, b.pods[i])),
    qemu: a.qemu.map((x, i) => pct(x, b.qemu[i])),
    comps: components.map((c, i) => `${c.name} ${pct(a.comps[i], b.comps[i]).toFixed(1)}%`),
    host: pct(a.host, b.host),
  };
}

async function main(): Promise<void> {
  const why = clusterUnavailableReason();
  if (why) throw new Error(`bench:density: ${why}`);
  const maxGuests = num('max-guests');
  const batch = num('batch');
  const memory = values['guest-memory'] ?? '112Mi';
  const guestBytes = Number(bytesOf(memory, '--guest-memory') ?? 0n);
  const template = (densityVm('x', NS, memory) as { spec: { template: { spec: object } } }).spec.template;
  const budgetMiB = Number(memoryOverhead(template as Parameters<typeof memoryOverhead>[0])) / MiB;
  const deadline = Date.now() + num('deadline-min') * 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-density-'));
  const stateDir = testStateDir();
  const info = await up({
    stateDir,
    bridge: TEST_BRIDGE,
    podSubnet: TEST_POD_SUBNET,
    maxPods: num('max-pods'),
    log,
  });
  const guests: Guest[] = [];
  let stop: { reason: string; detail: string } | undefined;
  try {
    const kubectl = kubectlWith(info.kubeconfigPath);
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    // Upstream's CPU overcommit knob: a VMI without dedicated CPUs requests vCPUs / ratio
    // (default 10: 100m), which on 2 cores binds the scheduler at ~17 tiny guests.
    installComponents(info, dir, kubectl, {}, { cpuAllocationRatio: num('cpu-allocation-ratio') });
    await componentsReady(core, [info.nodeName]);
    await waitFor(
      'the kvm device plugin registered',
      async () =>
        (await core.readNode({ name: info.nodeName })).status?.capacity?.['devices.kubevirt.io/kvm'],
      120_000,
      500,
    );
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await waitFor(
      'default service account',
      () => core.readNamespacedServiceAccount({ name: 'default', namespace: NS }),
      60_000,
      200,
    );
    log(`upstream's overhead budget for this VMI: ${budgetMiB.toFixed(1)} MiB; guest RAM ${memory}`);
    while (!stop) {
      if (guests.length >= maxGuests) {
        stop = { reason: 'max-guests', detail: `--max-guests ${maxGuests}` };
        break;
      }
      if (Date.now() > deadline) {
        stop = { reason: 'deadline', detail: `--deadline-min ${values['deadline-min']}` };
        break;
      }
      const next = await nextBatchRoom(core, info.nodeName, {
        size: Math.min(batch, maxGuests - guests.length),
        perGuestMiB: guestBytes / MiB + budgetMiB,
        minAvailableMiB: num('min-available-mib'),
      });
      if (next.stop) {
        stop = next.stop;
        break;
      }
      const names = Array.from({ length: next.room }, (_, i) => `dens-${guests.length + i}`);
      const r = await bootBatch(info, core, kubectl, {
        dir,
        namespace: NS,
        names,
        memory,
        timeoutMs: num('boot-timeout-s') * 1000,
      });
      guests.push(...r.booted);
      stop = r.stop;
      log(
        `batch ${names[0]}..${names.at(-1)}: ${r.booted.length} booted (${r.booted.map((g) => g.bootMs).join(', ')} ms); ${guests.length} running; load ${loadavg()}`,
      );
    }
    log(`stopped: ${stop?.reason}: ${stop?.detail}`);
    const first = (await core.listNamespacedPod({ namespace: NS })).items[0];
    log(
      `a launcher pod's requests: ${JSON.stringify(first?.spec?.containers?.map((c) => [c.name, c.resources?.requests]))}`,
    );
    if (!guests.length) throw new Error(`no guest booted (${stop?.reason}: ${stop?.detail})`);
    await sleep(num('settle-s') * 1000);
    // A guest whose figures cannot be read (its QEMU gone meanwhile) is left out, named.
    const measured = guests.filter((g) => {
      try {
        memoryOf(g, guestBytes);
        processCpuNs(g.qemuPid);
        return true;
      } catch (e) {
        log(`${g.name} left out of the figures: ${(e as Error).message}`);
        return false;
      }
    });
    const mem = measured.map((g) => memoryOf(g, guestBytes));
    const compPods = (await core.listNamespacedPod({ namespace: 'kubevirt' })).items.map((p) => ({
      name: p.metadata?.labels?.['kubevirt.io'] ?? p.metadata?.name ?? '',
      uid: p.metadata?.uid ?? '',
    }));
    const windowS = num('idle-window-s');
    const cpu = await idleCpu(measured, compPods, windowS);
    report(guests.length, measured, mem, cpu, { memory, budgetMiB, windowS, stop: stop?.reason ?? '' });
    const t = performance.now();
    kubectl('delete', 'vm', '--all', '-n', NS, '--wait=false');
    await waitFor(
      'every launcher pod gone',
      async () => (await core.listNamespacedPod({ namespace: NS })).items.length === 0,
      300_000,
      1_000,
    );
    log(
      `deleted ${guests.length} VMs: no launcher pod left after ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
    if (left.length) {
      log(`the cluster left behind: ${left.join('; ')}`);
      process.exitCode = 1;
    }
  }
}

const loadavg = () =>
  osLoadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/** Prints each guest's figures, the summary and the BENCH line. */
function report(
  running: number,
  guests: Guest[],
  mem: ReturnType<typeof memoryOf>[],
  cpu: Awaited<ReturnType<typeof idleCpu>>,
  o: { memory: string; budgetMiB: number; windowS: number; stop: string },
): void {
  for (const [i, g] of guests.entries())
    console.log(
      `${g.name}: boot ${g.bootMs} ms; pod working set ${mem[i].ws.toFixed(1)} MiB, guest RAM resident ${mem[i].resident.toFixed(1)} MiB, overhead ${mem[i].overhead.toFixed(1)} MiB (QEMU's own ${mem[i].qemuOverhead.toFixed(1)}); idle CPU ${cpu.pod[i].toFixed(2)}% of a core (QEMU ${cpu.qemu[i].toFixed(2)}%)`,
    );
  const overhead = mean(mem.map((m) => m.overhead));
  const idle = mean(cpu.pod);
  console.log(
    `${running} guests of ${o.memory} booted (stopped by ${o.stop}), ${guests.length} measured; overhead per VM ${overhead.toFixed(1)} MiB (${span(mem.map((m) => m.overhead))}) against upstream's budget ${o.budgetMiB.toFixed(1)} MiB; guest RAM resident ${mean(mem.map((m) => m.resident)).toFixed(1)} MiB`,
  );
  console.log(
    `idle over ${o.windowS} s: ${idle.toFixed(2)}% of a core per VM (${span(cpu.pod, 2)}), QEMU's part ${mean(cpu.qemu).toFixed(2)}%; all guests ${(idle * guests.length).toFixed(1)}%; components ${cpu.comps.join(', ')}; whole host ${cpu.host.toFixed(1)}% (of 200%), load ${loadavg()}`,
  );
  console.log(
    `BENCH density guests=${running} overhead_mib_per_vm=${overhead.toFixed(1)} idle_cpu_pct_per_vm=${idle.toFixed(2)} budget_mib_per_vm=${o.budgetMiB.toFixed(1)} qemu_overhead_mib_per_vm=${mean(mem.map((m) => m.qemuOverhead)).toFixed(1)} idle_qemu_cpu_pct_per_vm=${mean(cpu.qemu).toFixed(2)} stop=${o.stop}`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
