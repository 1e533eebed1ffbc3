/**
 * A VirtualMachineInstanceMigration end to end, on one host with two nodes: the
 * embedded store, virt-controller, and per node a local pod runtime and a virt-handler.
 * The source node's launchers use the system libvirtd; the target node's launchers use
 * a second libvirtd (test/support/second-libvirtd.ts), which its handler offers as
 * `targetNodeAddress`. A stand-in scheduler binds migration target pods to the target
 * node and other pods to the source node. The tiny guest boots on the source; the
 * migration object goes through every phase to Succeeded; the VMI is then on the target
 * node, the guest did not boot again and answers on the target launcher's console, the
 * source QEMU and launcher are gone. Serial: it starts its own libvirtd.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../src/api/generated/types';
import type { Pod } from '../../src/controllers/common/pod';
import { scrape } from '../../src/controllers/metrics/server';
import { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import {
  PodType,
  VirtualMachineInstanceMigrationType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER, type SerialConsole } from '../support/guest';
import {
  type SecondLibvirtd,
  secondLibvirtdUnavailable,
  startSecondLibvirtd,
} from '../support/second-libvirtd';
import { domainExists, e2eRun, NodeHarness, tinyGuestVm, waitFor } from './node-harness';

const run = e2eRun('VirtualMachineInstanceMigration end to end', secondLibvirtdUnavailable);

describe.runIf(run)('VirtualMachineInstanceMigration of a running tiny guest between two nodes', () => {
  const ns = 'default';
  const name = `vmim-${process.pid}`;
  const dom = `${ns}_${name}`;
  let store: EmbeddedStore;
  let daemon: SecondLibvirtd | undefined;
  let source: NodeHarness | undefined;
  let target: NodeHarness | undefined;
  let scheduler: NodeJS.Timeout | undefined;
  const consoles: SerialConsole[] = [];

  const getVmi = () => source!.getVmi(ns, name);

  beforeAll(async () => {
    store = await EmbeddedStore.open();
    daemon = await startSecondLibvirtd();
    source = new NodeHarness({ client: store, nodeName: `src-${process.pid}`, bindPending: false });
    // The target node's launchers and handler use the second libvirtd.
    target = new NodeHarness({
      client: store,
      nodeName: `tgt-${process.pid}`,
      bindPending: false,
      controller: false,
      libvirtSocket: daemon.socketPath,
      migrationAddress: daemon.uri,
    });
    await source.start();
    await target.start();
    // The scheduler's part: migration targets to the target node, the rest to the source.
    let binding = false;
    scheduler = setInterval(async () => {
      if (binding) return;
      binding = true;
      try {
        const unbound = await store.list<Pod & KubeObject>(PodType, { fieldSelector: 'spec.nodeName=' });
        for (const p of unbound.items) {
          if (p.metadata?.deletionTimestamp) continue;
          const node = p.metadata?.labels?.['kubevirt.io/migrationJobUID'] ? target! : source!;
          await store
            .update(PodType, { ...p, spec: { ...p.spec, nodeName: node.o.nodeName } } as KubeObject)
            .catch(() => undefined);
        }
      } finally {
        binding = false;
      }
    }, 100);
  }, 90_000);

  afterAll(async () => {
    if (scheduler) clearInterval(scheduler);
    for (const c of consoles) c.close();
    await target?.close();
    await source?.close(dom);
    await daemon?.stop();
  }, 90_000);

  it('boots on the source, migrates through every phase, runs on the target without a reboot', async () => {
    await store.create(VirtualMachineType, tinyGuestVm(name, ns) as KubeObject);
    const running = await waitFor('VMI Running on the source node', async () => {
      const v = await getVmi().catch(() => undefined);
      return v?.status?.phase === 'Running' ? v : undefined;
    });
    expect(running.status?.nodeName).toBe(source!.o.nodeName);
    const sourcePod = await source!.podOf(running);
    expect(sourcePod?.spec?.nodeName).toBe(source!.o.nodeName);
    const sourceConsole = await source!.console(sourcePod!);
    consoles.push(sourceConsole);
    await sourceConsole.waitFor(BOOT_MARKER, 180_000);
    const sourcePid = Number(
      spawnSync('cat', [`/run/libvirt/qemu/${dom}.pid`], { encoding: 'utf8' }).stdout.trim(),
    );
    expect(sourcePid).toBeGreaterThan(1);

    const created = Date.now();
    await store.create(VirtualMachineInstanceMigrationType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstanceMigration',
      metadata: { name: `${name}-mig`, namespace: ns },
      spec: { vmiName: name },
    } as KubeObject);
    const done = await waitFor(
      'the migration to end',
      async () => {
        const m = await store.get<VirtualMachineInstanceMigration & KubeObject>(
          VirtualMachineInstanceMigrationType,
          `${name}-mig`,
          ns,
        );
        return m.status?.phase === 'Succeeded' || m.status?.phase === 'Failed' ? m : undefined;
      },
      180_000,
    );
    // A figure for the report, not an assertion.
    console.log(`migration object created -> ${done.status?.phase}: ${Date.now() - created} ms`);
    const vmi = await getVmi();
    // On failure, say why (the migration's condition and the VMI's migration state).
    const why = JSON.stringify({ conditions: done.status?.conditions, ms: vmi.status?.migrationState });
    expect(done.status?.phase, why).toBe('Succeeded');
    // virt-controller's outcome metric (upstream's migrationstats collector) counts it.
    const scraped = await scrape([source!.controller!.metrics], 5_000);
    expect(scraped).toContain(
      `kubevirt_vmi_migration_succeeded{vmi="${name}",vmim="${name}-mig",namespace="${ns}"} 1`,
    );
    expect(scraped).not.toMatch(/^kubevirt_vmi_migration_failed\{/m);
    expect(done.status?.phaseTransitionTimestamps?.map((t) => t.phase)).toEqual([
      'Pending',
      'Scheduling',
      'Scheduled',
      'PreparingTarget',
      'TargetReady',
      'Running',
      'Succeeded',
    ]);

    // The VMI is the target node's now.
    expect(vmi.status?.phase).toBe('Running');
    expect(vmi.status?.nodeName).toBe(target!.o.nodeName);
    expect(vmi.metadata?.labels?.['kubevirt.io/nodeName']).toBe(target!.o.nodeName);
    const ms = vmi.status?.migrationState as NonNullable<VirtualMachineInstance['status']>['migrationState'];
    expect(ms).toMatchObject({
      migrationUid: done.metadata?.uid,
      sourceNode: source!.o.nodeName,
      targetNode: target!.o.nodeName,
      targetNodeAddress: daemon!.uri,
      targetNodeDomainDetected: true,
      completed: true,
      mode: 'PreCopy',
    });
    expect(ms?.failed).toBeUndefined();
    const stamp = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
    for (const t of [ms?.startTimestamp, ms?.endTimestamp, ms?.targetNodeDomainReadyTimestamp])
      expect(t).toMatch(stamp);

    // The guest runs under the second daemon only; the source QEMU is gone.
    const state = spawnSync('virsh', ['-c', daemon!.uri, 'domstate', dom], { encoding: 'utf8' });
    expect(state.stdout.trim()).toBe('running');
    await waitFor('the source QEMU to exit', () => !domainExists(dom), 30_000);

    // The guest booted once and answers on the target launcher's console.
    const targetPod = await target!.podOf(vmi);
    expect(targetPod?.metadata?.labels?.['kubevirt.io/migrationJobUID']).toBe(done.metadata?.uid);
    const targetConsole = await target!.console(targetPod!);
    consoles.push(targetConsole);
    targetConsole.write('\n');
    const out = await targetConsole.run('echo $((6*7))', 60_000);
    expect(out.trim()).toBe('42');
    expect(sourceConsole.output.split(BOOT_MARKER).length).toBe(2);
    expect(targetConsole.output).not.toContain(BOOT_MARKER);

    // The source launcher was released: its pod finished.
    await waitFor(
      'the source pod to finish',
      async () =>
        (await store.get<Pod & KubeObject>(PodType, sourcePod!.metadata?.name ?? '', ns)).status?.phase ===
        'Succeeded',
      60_000,
    );
    const vm = await source!.getVm(ns, name);
    expect(vm.status?.printableStatus).toBe('Running');
  }, 420_000);
});
