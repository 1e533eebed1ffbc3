/**
 * Reconcile throughput and memory of the runtime primitives, on each backend.
 *
 * A scenario runs in its own child process (so its RSS is its own): N Widgets are
 * created, then a Manager starts the sample controller (tests/controllers/runtime/
 * sample-controller.ts: per Widget, create an owned ConfigMap and patch status Ready);
 * the clock runs from manager start until every Widget is Ready with its child in the
 * caches. Reported: reconciles per second (reconcile calls / elapsed), and the process's
 * RSS after a GC with the store (embedded) and the informer caches holding N Widgets
 * plus N ConfigMaps.
 *
 *   embedded:  EmbeddedStore persisted to a temp dir with fsync (as local mode runs it),
 *              in process.
 *   apiserver: a real kube-apiserver + etcd (test/support/kube.ts), KubeClient with
 *              qps 1000 / burst 2000.
 *
 * Ends with: BENCH runtime embedded_reconciles=<n>/s apiserver_reconciles=<n>/s rss_mb_10k=<n>
 * (reconciles at 10,000 objects; rss_mb_10k: the embedded-backend process at 10,000).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddedStore, KubeClient, Manager, NamespaceType, type ObjectClient } from '../src/controllers';
import { ensureWidgetCrd, WidgetType } from '../test/controllers/runtime/contract';
import { addSampleController, type Widget } from '../test/controllers/runtime/sample-controller';
import { available as kubeAvailable, startControlPlane, unavailableReason } from '../test/support/kube';

interface Result {
  backend: string;
  n: number;
  reconciles: number;
  seconds: number;
  rate: number;
  /** Widgets brought to Ready per second. */
  objectsPerSecond: number;
  rssMb: number;
  /** RSS before any object existed (runtime, modules, tsx). */
  baseRssMb: number;
}

async function createAll(client: ObjectClient, n: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      await client.create(WidgetType, {
        apiVersion: `${WidgetType.group}/${WidgetType.version}`,
        kind: 'Widget',
        metadata: { name: `w${i}`, namespace: 'bench' },
        spec: { size: i },
      } as Widget);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

async function scenario(backend: string, n: number): Promise<Result> {
  (globalThis as { gc?: () => void }).gc?.();
  const baseRssMb = process.memoryUsage().rss / 1024 / 1024;
  let client: ObjectClient;
  let cleanup: () => Promise<void>;
  if (backend === 'embedded') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-bench-'));
    const store = await EmbeddedStore.open({ dir });
    client = store;
    cleanup = async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  } else {
    const cp = await startControlPlane({ scheduler: false, controllerManager: false });
    const kc = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 1000, burst: 2000 });
    client = kc;
    cleanup = async () => {
      kc.close();
      await cp.stop();
    };
  }
  await ensureWidgetCrd(client);
  await client.create(NamespaceType, { metadata: { name: 'bench' } });
  await createAll(client, n);

  const mgr = new Manager({ client, namespace: 'bench' });
  const { controller } = addSampleController(mgr, WidgetType, { workers: 8, namespace: 'bench' });
  const widgets = mgr.informers.informerFor<Widget>(WidgetType, { namespace: 'bench' });
  const t0 = performance.now();
  await mgr.start();
  for (;;) {
    const ready = widgets.indexer.list().filter((w) => w.status?.phase === 'Ready').length;
    if (ready === n) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - t0) / 1000;
  const reconciles = controller.stats.reconciles;
  if (controller.stats.errors)
    console.error(`${backend} n=${n}: ${controller.stats.errors} reconcile errors`);
  (globalThis as { gc?: () => void }).gc?.();
  const rssMb = process.memoryUsage().rss / 1024 / 1024;
  await mgr.stop();
  await cleanup();
  return {
    backend,
    n,
    reconciles,
    seconds,
    rate: reconciles / seconds,
    objectsPerSecond: n / seconds,
    rssMb,
    baseRssMb,
  };
}

async function main(): Promise<void> {
  const [, , mode, backend, nArg] = process.argv;
  if (mode === '--scenario') {
    const r = await scenario(backend, Number(nArg));
    process.stdout.write(`${JSON.stringify(r)}\n`);
    return;
  }
  const self = fileURLToPath(import.meta.url);
  const run = (b: string, n: number): Result | undefined => {
    try {
      const out = execFileSync(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', self, '--scenario', b, String(n)],
        {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
          maxBuffer: 1 << 24,
        },
      );
      return JSON.parse(out.trim().split('\n').pop()!) as Result;
    } catch (err) {
      console.error(`scenario ${b} n=${n} failed: ${(err as Error).message}`);
      return undefined;
    }
  };
  const results: Result[] = [];
  const backends = ['embedded'];
  if (kubeAvailable()) backends.push('apiserver');
  else console.log(`apiserver scenarios skipped: ${unavailableReason}`);
  for (const b of backends) {
    for (const n of [1000, 10_000]) {
      const r = run(b, n);
      if (!r) continue;
      results.push(r);
      console.log(
        `${b.padEnd(9)} n=${String(n).padStart(5)}: ${r.reconciles} reconciles in ${r.seconds.toFixed(2)} s = ${r.rate.toFixed(0)}/s ` +
          `(${r.objectsPerSecond.toFixed(0)} objects Ready/s), rss ${r.rssMb.toFixed(0)} MB (${(r.rssMb - r.baseRssMb).toFixed(0)} MB above the ${r.baseRssMb.toFixed(0)} MB at start)`,
      );
    }
  }
  const at10k = (b: string) => results.find((r) => r.backend === b && r.n === 10_000);
  const fmt = (v: number | undefined) => (v === undefined ? 'NA' : v.toFixed(0));
  console.log(
    `BENCH runtime embedded_reconciles=${fmt(at10k('embedded')?.rate)}/s apiserver_reconciles=${fmt(at10k('apiserver')?.rate)}/s rss_mb_10k=${fmt(at10k('embedded')?.rssMb)}`,
  );
}

await main();
