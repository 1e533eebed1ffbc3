/**
 * Control-plane benchmark of the virt-controller: 1,000 VirtualMachines created at once
 * on the embedded store, with the node simulator standing in for scheduler, kubelet and
 * node agent. Measures the time until every VMI is Running, per-VM latency (create call
 * to VMI Running), the VMI and launcher-pod writes per VMI, and memory.
 *
 *   npm run bench:controllers [-- --vms 1000 --workers 8]
 */
import { createClusterConfig } from '../src/api/config/cluster-config';
import type { VirtualMachine, VirtualMachineInstance } from '../src/api/generated/types';
import { VmiResource } from '../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';
import { VirtController } from '../src/controllers/virt-controller/virt-controller';
import { NodeSimulator } from '../test/support/node-simulator';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

const N = arg('vms', 1000);
const WORKERS = arg('workers', 8);

function vm(i: number): VirtualMachine {
  const name = `bench-vm-${i}`;
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace: 'default' },
    spec: {
      runStrategy: 'Always',
      template: {
        metadata: { labels: { 'kubevirt.io/vm': name } },
        spec: {
          domain: {
            devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] },
            resources: { requests: { memory: '64Mi' } },
          },
          volumes: [
            { name: 'root', containerDisk: { image: 'quay.io/kubevirt/cirros-container-disk-demo' } },
          ],
        },
      },
    },
  };
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const store = await EmbeddedStore.open();
  let vmiPodWrites = 0;
  let vmWrites = 0;
  const ctrl = new VirtController({
    client: store,
    config: createClusterConfig({}, { hostArchitecture: 'amd64' }),
    launcher: { launcherImage: 'kubevirt-ts/launcher:bench' },
    workers: WORKERS,
    onWrite: (w) => {
      if (w.kind === 'VirtualMachine') vmWrites++;
      else vmiPodWrites++;
    },
    onError: (c, k, e) => console.warn(`${c} ${k}: ${e.message}`),
  });
  // One process, one cache: the simulator reads the controller's informers.
  const sim = new NodeSimulator(store, { informers: ctrl.informers });
  await ctrl.start();
  await sim.start();

  const created = new Map<string, number>();
  const runningAt = new Map<string, number>();
  let resolveAll!: () => void;
  const allRunning = new Promise<void>((r) => {
    resolveAll = r;
  });
  const seen = (o: KubeObject) => {
    const v = o as VirtualMachineInstance;
    const name = v.metadata?.name ?? '';
    if (v.status?.phase === 'Running' && !runningAt.has(name)) {
      runningAt.set(name, performance.now());
      if (runningAt.size === N) resolveAll();
    }
  };
  ctrl.informers.informerFor(VmiResource).addEventHandler({ onAdd: seen, onUpdate: (_a, b) => seen(b) });

  const rssBefore = process.memoryUsage().rss;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const obj = vm(i);
      created.set(obj.metadata!.name!, performance.now());
      await store.create(VirtualMachineType, obj as KubeObject);
    }),
  );
  const tCreated = performance.now();
  const timeout = setTimeout(() => {
    console.error(`only ${runningAt.size}/${N} VMIs Running after 120 s`);
    process.exit(1);
  }, 120_000);
  await allRunning;
  clearTimeout(timeout);
  const tAll = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const rss = process.memoryUsage().rss;
  await sim.stop();
  await ctrl.stop();

  const lat = [...runningAt.entries()]
    .map(([name, t]) => t - (created.get(name) ?? t0))
    .sort((a, b) => a - b);
  const allS = (tAll - t0) / 1000;
  const handler = sim.writes.handler;
  const perVmi = (vmiPodWrites + handler) / N;
  console.log(`vms=${N} workers=${WORKERS}`);
  console.log(`create calls done after ${((tCreated - t0) / 1000).toFixed(3)} s`);
  console.log(
    `all ${N} VMIs Running after ${allS.toFixed(3)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(3)} s CPU of this process (the host's load inflates wall time)`,
  );
  console.log(
    `latency create->Running: p50 ${pct(lat, 50).toFixed(1)} ms, p90 ${pct(lat, 90).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${lat[lat.length - 1].toFixed(1)} ms`,
  );
  console.log(
    `writes of VMIs and launcher pods: controllers ${vmiPodWrites}, node agent ${handler} -> ${perVmi.toFixed(2)} per VMI`,
  );
  console.log(
    `simulated infrastructure pod writes: scheduler ${sim.writes.scheduler}, kubelet ${sim.writes.kubelet} (${((sim.writes.scheduler + sim.writes.kubelet) / N).toFixed(2)} per VMI, not counted above)`,
  );
  console.log(`VM status writes: ${vmWrites} (${(vmWrites / N).toFixed(2)} per VM)`);
  console.log(
    `rss ${(rss / 2 ** 20).toFixed(0)} MiB (before creates ${(rssBefore / 2 ** 20).toFixed(0)} MiB)`,
  );

  await store.close();
  console.log(
    `BENCH controllers vms=${N} all_running_s=${allS.toFixed(2)} p50_ms=${pct(lat, 50).toFixed(0)} p99_ms=${pct(lat, 99).toFixed(0)} writes_per_vmi=${perVmi.toFixed(2)} rss_mb=${(rss / 2 ** 20).toFixed(0)}`,
  );
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
