/**
 * bench:node-handler-rss — virt-handler's resident memory with N real guests running
 * (default 20, BENCH_NODE_GUESTS). virt-handler runs as its own process (the CLI's
 * `virt-handler` on the embedded store's socket, no pod runtime in it), so its RSS is the
 * handler's alone; the store, virt-controller and the local pod runtime run in this
 * process. Each VM is the tiny guest (128 MiB, emulation/TCG) through a real launcher.
 * The figure is sampled once every VMI is Running (written by that handler).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveEmbeddedStore } from '../src/controllers/runtime/embedded/server';
import { EmbeddedStore } from '../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';
import { cliBuilt, cliEntry, LIBVIRT_URI, NodeHarness, tinyGuestVm, waitFor } from '../test/e2e/node-harness';
import { available, unavailableReason } from '../test/support/guest';
import { type Memory, median, memoryOf } from './memory';

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  if (!available()) throw new Error(unavailableReason);
  if (!cliBuilt()) throw new Error(`the CLI is not built (${cliEntry()}): run npm run build`);
  const guests = Number(process.env.BENCH_NODE_GUESTS ?? 20);
  const prefix = `hrss-${process.pid}`;
  const store = await EmbeddedStore.open();
  const node = new NodeHarness({ client: store, nodeName: `bench-hrss-${process.pid}` });
  const server = await serveEmbeddedStore(store, join(node.root, 'store.sock'));
  let handler: ChildProcess | undefined;
  try {
    node.controller = node.newController();
    await node.controller.start();
    node.runtime = node.newRuntime();
    await node.runtime.start();
    handler = spawn(
      process.execPath,
      [
        cliEntry(),
        'virt-handler',
        '--node-name',
        node.o.nodeName,
        '--store-socket',
        join(node.root, 'store.sock'),
        '--pods-root',
        node.podsRoot,
        '--notify-socket',
        join(node.root, 'handler', 'domain-notify.sock'),
        '--driver',
        'emulation',
        '--libvirt-uri',
        LIBVIRT_URI,
        // This process's pod runtime runs the launcher pods: no kubelet containers.
        '--local-pods',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    handler.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const pid = handler.pid ?? 0;
    // A JSON log line (`"msg":"running"`) since the components log structured.
    await waitFor('virt-handler running', () => stderr.includes('"msg":"running"'), 60_000).catch((e) => {
      throw new Error(`${(e as Error).message}\n${stderr}`);
    });
    await sleep(3_000);
    const idle = rssMiB(pid);

    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: guests }, (_, i) =>
        store.create(VirtualMachineType, tinyGuestVm(`${prefix}-${i}`, 'default') as KubeObject),
      ),
    );
    let peak = idle;
    await waitFor(
      `${guests} VMIs Running`,
      async () => {
        if (handler?.exitCode !== null) throw new Error(`virt-handler exited: ${stderr}`);
        peak = Math.max(peak, rssMiB(pid));
        const vmis = await Promise.all(
          Array.from({ length: guests }, (_, i) =>
            node.getVmi('default', `${prefix}-${i}`).catch(() => undefined),
          ),
        );
        return vmis.every((v) => v?.status?.phase === 'Running');
      },
      900_000,
    );
    const allRunningMs = performance.now() - t0;
    // Steady state: a few resyncs with every guest running.
    const samples: number[] = [];
    for (let i = 0; i < 10; i++) {
      await sleep(1_000);
      samples.push(rssMiB(pid));
    }
    peak = Math.max(peak, ...samples);
    const steady = samples[samples.length - 1];
    // The launchers' memory side by side: with many running, PSS shows each one's share.
    const launchers: Memory[] = [];
    for (let i = 0; i < guests; i++) {
      const vmi = await node.getVmi('default', `${prefix}-${i}`);
      const pod = await node.podOf(vmi);
      const lpid = node.runtime?.pidOf(pod?.metadata?.uid ?? '');
      if (lpid) launchers.push(memoryOf(lpid));
    }
    console.log(
      `guests: ${guests} (tiny guest, 128 MiB, TCG); load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
    );
    console.log(`all ${guests} VMIs Running after ${Math.round(allRunningMs)} ms`);
    console.log(`virt-handler RSS idle (no guests): ${idle.toFixed(1)} MiB`);
    console.log(
      `virt-handler RSS with ${guests} guests running: ${steady.toFixed(1)} MiB (peak ${peak.toFixed(1)} MiB)`,
    );
    console.log(
      `launchers (${launchers.length}): RSS median ${median(launchers.map((m) => m.rss)).toFixed(1)} MiB, PSS median ${median(launchers.map((m) => m.pss)).toFixed(1)} MiB (sum ${launchers.reduce((a, m) => a + m.pss, 0).toFixed(0)} MiB), private median ${median(launchers.map((m) => m.uss)).toFixed(1)} MiB`,
    );
    console.log(
      `BENCH node_handler_rss guests=${guests} handler_rss_mb=${steady.toFixed(1)} handler_idle_rss_mb=${idle.toFixed(1)}`,
    );
  } finally {
    handler?.kill('SIGTERM');
    await node.close(`default_${prefix}`);
    await server.close();
    await store.close?.();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
