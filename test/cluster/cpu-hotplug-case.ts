/**
 * CPU and memory hotplug on the two-node cluster (issue 28 item 2), run by
 * migration.serial.test.ts after its drain case, on that cluster and guest (the tiny VM
 * with 1Gi of memory, back on node A, booted once). LiveUpdate is the default rollout
 * strategy; the VMI was defaulted to maxSockets 4 and maxGuest 4Gi.
 *
 * CPU: sockets 1 -> 2 has the VM controller set the VMI's sockets, the VMI gets
 * HotVCPUChange, the workload updater creates a `kubevirt-workload-update-*` migration
 * whose target launcher pod asks for the second vCPU's share of CPU, and once the guest
 * runs there the handler has the launcher enable the vCPU (libvirt setvcpus, live).
 * Asserted: the migration Succeeded, currentCPUTopology has 2 sockets and the condition
 * is gone, the guest shows /sys/devices/system/cpu/cpu1 (which it then onlines: 2
 * processors) without booting again (no boot marker on the new launcher's console, its
 * uptime older than its first boot), and the VM never showed RestartRequired.
 *
 * Memory: memory.guest 1Gi -> 2Gi the same way (HotMemoryChange, a second migration, the
 * request 2Gi), then the handler has the launcher attach the virtio-mem device: the
 * guest's MemTotal grows by about 1 GiB, no boot marker on the new launcher.
 *
 * Then sockets 5, past maxSockets: RestartRequired with upstream's reason, the VMI left at
 * 2 sockets and no migration. Prints `BENCH hotplug cpu_hotplug_ms=<n>
 * memory_hotplug_ms=<n>`: each edit to the guest showing it (its console polled).
 */
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { waitFor } from '../support/wait';
import { kubevirtReads } from './kubevirt-reads';
import { consoleAnswers } from './operator-cluster';

/** What the CPU hotplug case needs from the migration test. */
export interface CpuHotplugContext {
  info: ClusterInfo;
  kubectl: (...args: string[]) => string;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  ns: string;
  /** The VM (its VMI has the same name), Running, booted once at `booted`. */
  vm: string;
  markers: (pod: V1Pod, vmiUid: string) => number;
  booted: number;
}

const PAST_MAX = "CPU sockets updated in template spec to a value higher than what's available";

/** The CPU hotplug described above, with its assertions. */
export async function cpuHotplugCase(c: CpuHotplugContext): Promise<void> {
  const { kubectl, ns } = c;
  const { vmi, vm, workloadUpdates, finishedUpdates } = kubevirtReads(c.custom, ns, c.vm);
  const setSockets = (n: number) =>
    kubectl(
      'patch',
      'vm',
      c.vm,
      '-n',
      ns,
      '--type',
      'merge',
      '-p',
      JSON.stringify({ spec: { template: { spec: { domain: { cpu: { sockets: n } } } } } }),
    );
  const cpusInGuest = (tag: string) =>
    consoleAnswers(c.info, c.vm, { expr: '$(ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l)', tag });
  const restartRequired = async () =>
    (await vm())?.status?.conditions?.find((x) => x.type === 'RestartRequired');

  // The drain case's bandwidth policy would slow this migration down: not this case's subject.
  kubectl('delete', 'migrationpolicy', 'drain-slow', '--ignore-not-found');
  const before = await vmi();
  const uid = before?.metadata?.uid ?? '';
  expect(before?.spec.domain.cpu).toMatchObject({ sockets: 1, maxSockets: 4 });
  expect(before?.status?.currentCPUTopology?.sockets).toBe(1);
  expect(await workloadUpdates()).toEqual([]);
  expect(await cpusInGuest('C0')).toBe(1);

  const t0 = performance.now();
  setSockets(2);
  // The VMI first (polled cheaply): the handler recorded the vCPUs it enabled; then the guest.
  const after = await waitFor(
    "the VMI's hotplug recorded",
    async () => {
      const v = await vmi();
      const hot = v?.status?.conditions?.some((x) => x.type === 'HotVCPUChange');
      return v?.status?.currentCPUTopology?.sockets === 2 && !hot ? v : undefined;
    },
    300_000,
    250,
  );
  const shown = await waitFor(
    'the second vCPU in the guest',
    async () => ((await cpusInGuest('C1')) === 2 ? performance.now() : undefined),
    60_000,
    200,
  );
  const cpuHotplugMs = Math.round(shown - t0);
  const [m] = await finishedUpdates(1);
  expect(m?.metadata?.name).toMatch(/^kubevirt-workload-update-/);
  expect(m?.spec?.priority).toBe('user-triggered');
  expect(m?.status?.phase).toBe('Succeeded');
  expect(await workloadUpdates()).toHaveLength(1);
  expect(after.metadata?.uid).toBe(uid);
  expect(after.spec.domain.cpu?.sockets).toBe(2);
  expect(after.status?.nodeName).toBe(m?.status?.migrationState?.targetNode);
  expect(await restartRequired()).toBeUndefined();
  // The target launcher pod was made for two vCPUs (the computed request: 100m each).
  const pods = (
    await c.core.listNamespacedPod({ namespace: ns, labelSelector: `kubevirt.io/created-by=${uid}` })
  ).items;
  const target = pods.find((p) => p.metadata?.name === m?.status?.migrationState?.targetPod);
  if (!target) throw new Error(`no target launcher pod ${m?.status?.migrationState?.targetPod}`);
  const compute = target.spec?.containers.find((x) => x.name === 'compute');
  expect(compute?.resources?.requests?.cpu).toBe('200m');
  // The same guest: no boot on the new pod's console, an uptime older than its one boot.
  expect(c.markers(target, uid)).toBe(0);
  const uptime = await consoleAnswers(c.info, c.vm, {
    expr: `$(read u r </proc/uptime; echo \${u%.*})`,
    tag: 'UP',
  });
  expect(uptime).toBeGreaterThanOrEqual(Math.floor((performance.now() - c.booted) / 1000) - 1);
  // The new vCPU is usable: the guest onlines it (no udev here to do it) and runs on two.
  const online = 'echo 1 >/sys/devices/system/cpu/cpu1/online; grep -c ^processor /proc/cpuinfo';
  expect(await consoleAnswers(c.info, c.vm, { expr: `$(${online})`, tag: 'ON' })).toBe(2);

  // Memory: memory.guest 1Gi -> 2Gi (maxGuest 4Gi): a second workload-update migration, to
  // a pod requesting the new memory, and the virtio-mem device plugs 1 GiB into the guest.
  const memTotal = (tag: string) =>
    consoleAnswers(c.info, c.vm, { expr: "$(grep MemTotal /proc/meminfo | tr -s ' ' | cut -d' ' -f2)", tag });
  const booted = await vmi();
  expect(booted?.spec.domain.memory).toMatchObject({ guest: '1Gi', maxGuest: '4Gi' });
  expect(booted?.status?.memory?.guestRequested).toBe('1Gi');
  const kib0 = await memTotal('M0');
  const t1 = performance.now();
  kubectl(
    'patch',
    'vm',
    c.vm,
    '-n',
    ns,
    '--type',
    'merge',
    '-p',
    JSON.stringify({ spec: { template: { spec: { domain: { memory: { guest: '2Gi' } } } } } }),
  );
  const grown = await waitFor(
    "the VMI's memory hotplug recorded",
    async () => {
      const v = await vmi();
      const hot = v?.status?.conditions?.some((x) => x.type === 'HotMemoryChange');
      return v?.status?.memory?.guestRequested === '2Gi' && !hot ? v : undefined;
    },
    300_000,
    250,
  );
  const kib1 = await waitFor(
    'MemTotal 1 GiB larger in the guest',
    async () => {
      const k = await memTotal('M1');
      return k >= kib0 + 1024 * 1024 * 0.95 ? k : undefined;
    },
    60_000,
    200,
  );
  const memoryHotplugMs = Math.round(performance.now() - t1);
  const updates = await finishedUpdates(2);
  const mm = updates.find((x) => x.metadata?.name !== m?.metadata?.name);
  expect(mm?.status?.phase).toBe('Succeeded');
  expect(grown.status?.nodeName).toBe(mm?.status?.migrationState?.targetNode);
  expect(grown.spec.domain.resources?.requests?.memory).toBe('2Gi');
  const memPod = (
    await c.core.listNamespacedPod({ namespace: ns, labelSelector: `kubevirt.io/created-by=${uid}` })
  ).items.find((p) => p.metadata?.name === mm?.status?.migrationState?.targetPod);
  if (!memPod) throw new Error(`no target launcher pod ${mm?.status?.migrationState?.targetPod}`);
  expect(c.markers(memPod, uid)).toBe(0);
  expect(await restartRequired()).toBeUndefined();
  expect(await cpusInGuest('C2')).toBe(2);
  process.stderr.write(
    `[memory-hotplug] MemTotal ${kib0} -> ${kib1} kB in ${memoryHotplugMs} ms through ${mm?.metadata?.name}\n`,
  );

  // Past maxSockets: a restart, with the reason; the VMI is left alone.
  setSockets(5);
  const cond = await waitFor('RestartRequired', restartRequired, 60_000, 500);
  expect(cond).toMatchObject({ status: 'True', message: PAST_MAX });
  expect((await vmi())?.spec.domain.cpu?.sockets).toBe(2);
  expect(await workloadUpdates()).toHaveLength(2);
  process.stdout.write(`BENCH hotplug cpu_hotplug_ms=${cpuHotplugMs} memory_hotplug_ms=${memoryHotplugMs}\n`);
  // Where the time went, from the migration's own timestamps (to the second).
  const at = (phase: string) =>
    Date.parse(
      String(m?.status?.phaseTransitionTimestamps?.find((p) => p.phase === phase)?.phaseTransitionTimestamp),
    );
  const created = Date.parse(String(m?.metadata?.creationTimestamp));
  process.stderr.write(
    `[cpu-hotplug] sockets 1 -> 2 in ${cpuHotplugMs} ms through ${m?.metadata?.name}: created to Succeeded ${at('Succeeded') - created} ms, ` +
      `of which Running to Succeeded ${at('Succeeded') - at('Running')} ms\n`,
  );
}
