/**
 * bench:density's guests: the tiny containerDisk VM, started a batch at a time on the
 * real one-node cluster, each counted once its boot marker shows on its serial console;
 * and why the next batch must not start (the node's pod limit, memory, the bound).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { parse } from 'yaml';
import type { ClusterInfo } from '../scripts/cluster/state';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../src/controllers/launcher-protocol/paths';
import { shortDir } from '../src/controllers/launcher-protocol/short-dir';
import { BOOT_MARKER, SerialConsole } from '../test/support/guest';
import { memAvailableMiB } from './pod-cpu';

const repo = new URL('..', import.meta.url).pathname;
const MARKER_LINE = new RegExp(`${BOOT_MARKER}[^\\n]*uptime=[0-9.]+\\s`);

/** A guest that booted: its launcher pod and QEMU. */
export interface Guest {
  name: string;
  podUid: string;
  podName: string;
  qemuPid: number;
  /** kubectl create to the boot marker. */
  bootMs: number;
}

/** What a batch ended with: the guests that booted, and why the run must stop, if it must. */
export interface BatchResult {
  booted: Guest[];
  stop?: { reason: string; detail: string };
}

/** examples/vm-tiny-containerdisk.yaml as VM `name` in `namespace`, with `memory` of RAM. */
export function densityVm(name: string, namespace: string, memory: string): Record<string, unknown> {
  const vm = parse(readFileSync(join(repo, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8'));
  vm.metadata = { name, namespace };
  vm.spec.template.metadata.labels = { 'kubevirt.io/vm': name };
  vm.spec.template.spec.domain.resources.requests.memory = memory;
  return vm;
}

const podReady = (p: V1Pod) => p.spec?.nodeName && p.metadata?.uid;

/** Why a launcher pod will not run, if the scheduler or the kubelet refused it. */
function refusal(p: V1Pod): { reason: string; detail: string } | undefined {
  const sched = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (sched?.status === 'False' && sched.reason === 'Unschedulable') {
    const msg = sched.message ?? '';
    const reason = /Too many pods/.test(msg)
      ? 'pod-limit'
      : /Insufficient memory/.test(msg)
        ? 'memory-requests'
        : /Insufficient cpu/.test(msg)
          ? 'cpu-requests'
          : 'unschedulable';
    return { reason, detail: `scheduler: ${msg}` };
  }
  // The kubelet's admission (OutOfpods, OutOfmemory, ...) fails the pod outright.
  if (p.status?.phase === 'Failed') {
    const r = p.status.reason ?? 'Failed';
    const reason = /pods/i.test(r) ? 'pod-limit' : /memory/i.test(r) ? 'memory' : 'pod-failed';
    return { reason, detail: `kubelet: ${r}: ${p.status.message ?? ''}` };
  }
  return undefined;
}

/** Waits for VM `name`'s launcher pod to be placed, or for its refusal. */
async function launcherPod(
  core: CoreV1Api,
  namespace: string,
  name: string,
  deadline: number,
): Promise<{ pod: V1Pod } | { reason: string; detail: string }> {
  const labelSelector = `kubevirt.io=virt-launcher,kubevirt.io/vm=${name}`;
  for (;;) {
    const pod = (await core.listNamespacedPod({ namespace, labelSelector })).items[0];
    if (pod) {
      const refused = refusal(pod);
      if (refused) return refused;
      if (podReady(pod)) return { pod };
    }
    if (Date.now() > deadline)
      return { reason: 'boot-timeout', detail: `no placed launcher pod for ${name}` };
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** One guest: its pod placed, then its console's boot marker, within `deadline`. */
async function bootOne(
  info: ClusterInfo,
  core: CoreV1Api,
  namespace: string,
  name: string,
  t0: number,
  deadline: number,
): Promise<Guest | { reason: string; detail: string }> {
  const placed = await launcherPod(core, namespace, name, deadline);
  if (!('pod' in placed)) return placed;
  const { pod } = placed;
  const uid = pod.metadata?.uid ?? '';
  const sockets = podEmptyDirPath(join(info.stateDir, 'kubelet', 'pods'), uid, 'sockets');
  try {
    const con = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), deadline - Date.now());
    try {
      await con.waitFor(MARKER_LINE, Math.max(1, deadline - Date.now()));
    } finally {
      con.close();
    }
  } catch (err) {
    const now = (await core.listNamespacedPod({ namespace, labelSelector: `kubevirt.io/vm=${name}` }))
      .items[0];
    const refused = now && refusal(now);
    return refused ?? { reason: 'boot-timeout', detail: `${name}: ${(err as Error).message.split('\n')[0]}` };
  }
  const bootMs = Math.round(performance.now() - t0);
  const qemuPid = Number(
    execFileSync('pgrep', ['-f', `guest=${namespace}_${name},`], { encoding: 'utf8' })
      .trim()
      .split('\n')[0],
  );
  return { name, podUid: uid, podName: pod.metadata?.name ?? '', qemuPid, bootMs };
}

/**
 * Creates VMs `names` at once (one `kubectl create`) and waits for each to boot, up to
 * `timeoutMs`; a guest that is refused or does not boot in time stops the run.
 */
export async function bootBatch(
  info: ClusterInfo,
  core: CoreV1Api,
  kubectl: (...args: string[]) => string,
  o: { dir: string; namespace: string; names: string[]; memory: string; timeoutMs: number },
): Promise<BatchResult> {
  const file = join(o.dir, `${o.names[0]}.json`);
  const items = o.names.map((n) => densityVm(n, o.namespace, o.memory));
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  const t0 = performance.now();
  kubectl('create', '-f', file);
  const deadline = Date.now() + o.timeoutMs;
  const results = await Promise.all(o.names.map((n) => bootOne(info, core, o.namespace, n, t0, deadline)));
  const booted = results.filter((r): r is Guest => 'qemuPid' in r);
  const stop = results.find((r): r is { reason: string; detail: string } => 'reason' in r);
  return { booted, ...(stop ? { stop } : {}) };
}

/**
 * How many guests the next batch may start (at most `size`) and, when none, why: the
 * node's MemoryPressure, the host's memory floor (the machine is shared: `minAvailableMiB`
 * stays free after the batch's `perGuestMiB` each), or the kubelet's pod limit
 * (the node's allocatable pods against the pods on it).
 */
export async function nextBatchRoom(
  core: CoreV1Api,
  nodeName: string,
  o: { size: number; perGuestMiB: number; minAvailableMiB: number },
): Promise<{ room: number; stop?: { reason: string; detail: string } }> {
  const node = await core.readNode({ name: nodeName });
  const pressure = node.status?.conditions?.find((c) => c.type === 'MemoryPressure');
  if (pressure?.status === 'True')
    return { room: 0, stop: { reason: 'memory-pressure', detail: `node: ${pressure.message}` } };
  const avail = memAvailableMiB();
  const byMemory = Math.floor((avail - o.minAvailableMiB) / o.perGuestMiB);
  if (byMemory < 1)
    return {
      room: 0,
      stop: {
        reason: 'host-memory',
        detail: `MemAvailable ${Math.round(avail)} MiB: one more guest (${o.perGuestMiB} MiB) leaves under ${o.minAvailableMiB} MiB`,
      },
    };
  const pods = (
    await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` })
  ).items.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed').length;
  const limit = Number(node.status?.allocatable?.pods ?? 110);
  if (pods >= limit)
    return {
      room: 0,
      stop: { reason: 'pod-limit', detail: `${pods} pods on the node, allocatable ${limit}` },
    };
  return { room: Math.min(o.size, limit - pods, byMemory) };
}
