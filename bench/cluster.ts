/**
 * bench:cluster — the same tiny VM three ways in one run: on the real one-node cluster
 * (kubelet + containerd, components from the manifests, the launcher pod started by the
 * kubelet), in local mode (`LocalNode`, what `kubevirt-ts up` runs) and by a raw `virsh
 * create` of the domain local mode defined; each from "created" to the boot marker on the
 * serial console. And the launcher pod's memory on the cluster: its pod cgroup's working
 * set (usage minus inactive file pages, the kubelet's definition) minus the guest's RAM.
 *
 * The VM is examples/vm-tiny-containerdisk.yaml without its network interface (raw virsh
 * has no pod network to give it): the tiny guest's bootable disk as a containerDisk
 * (the image on the cluster, the local image store's copy of the same disk in local mode,
 * a qcow2 overlay of the same disk for virsh), TCG. Needs root, the cluster's pieces
 * (scripts/cluster/setup.sh), `npm run build`, and the machine's one kubelet: it brings
 * the test cluster up in $KUBEVIRT_TS_CACHE/cluster-test and down again, under the
 * machine-wide cluster lock (it takes `flock /tmp/kvts-cluster.lock` itself).
 * BENCH_CLUSTER_RUNS=N (default 1) repeats the three, alternating, and reports medians;
 * BENCH_CLUSTER_SKIP=1 leaves the cluster out. Each cluster run prints its timeline
 * (bench/cluster-timeline.ts); BENCH_CLUSTER_TRACE=1 adds containerd's and the kubelet's
 * steps to it (their logs turned up: info, -v=2). The launcher pod's working set is read 3 s
 * after the marker; the guest's RAM subtracted is what QEMU has resident of it.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { down } from '../scripts/cluster/down';
import type { ClusterInfo } from '../scripts/cluster/state';
import { missingPieces, up } from '../scripts/cluster/up';
import { applyObjects, loadAndAdmit } from '../src/cli/local/apply';
import { ImageStore } from '../src/cli/local/images';
import { LocalNode } from '../src/cli/local/local-node';
import { statePaths } from '../src/cli/local/state-dir';
import type { Pod } from '../src/controllers/common/pod';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../src/controllers/launcher-protocol/paths';
import { shortDir } from '../src/controllers/launcher-protocol/short-dir';
import { PodType, VirtualMachineType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';
import { findLibvirtDaemon } from '../src/controllers/virt-launcher/libvirt-daemons';
import { TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../test/support/cluster';
import { installComponents } from '../test/support/cluster-install';
import { kubectlBin, kubectlWith } from '../test/support/cluster-pods';
import { BOOT_MARKER, SerialConsole } from '../test/support/guest';
import { cacheDir } from '../test/support/integration';
import { waitFor } from '../test/support/wait';
import { apiRequestCounts, clusterTimeline, cpuSnapshot } from './cluster-timeline';
import { guestResident, podMemoryCgroup, workingSet } from './pod-memory';
import { virshRun } from './virsh-run';

const repo = new URL('..', import.meta.url).pathname;
const DISK = join(cacheDir, 'guest', 'current', 'boot.qcow2');
const IMAGE = 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest';
const MARKER_LINE = new RegExp(`${BOOT_MARKER}[^\\n]*uptime=[0-9.]+\\s`);
/** VM name prefix (one VM per run and mode). */
const NAME = 'bench-tiny';
const NS = 'bench-cluster';
const MiB = 1024 * 1024;
/** The VM's memory (examples/vm-tiny-containerdisk.yaml requests 128Mi). */
const GUEST_MIB = 128;
const log = (m: string) => process.stderr.write(`[bench:cluster] ${m}\n`);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** The example VM without a network (virsh has none to give), in `namespace`. */
function benchVm(name: string, namespace: string): Record<string, unknown> {
  const vm = parse(readFileSync(join(repo, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8'));
  vm.metadata = { name, namespace };
  const spec = vm.spec.template.spec;
  delete spec.networks;
  delete spec.domain.devices.interfaces;
  spec.domain.devices.autoattachPodInterface = false;
  vm.spec.template.metadata.labels = { 'kubevirt.io/vm': name };
  return vm;
}

/** Connects to a launcher's console relay as soon as it exists; resolves when the marker shows. */
async function markerOn(socketsDir: string, t0: number): Promise<number> {
  const con = await SerialConsole.connect(join(shortDir(socketsDir), CONSOLE_SOCKET), 300_000);
  try {
    await con.waitFor(MARKER_LINE, 300_000);
    return Math.round(performance.now() - t0);
  } finally {
    con.close();
  }
}

/** Local mode: create -> marker; returns the time and the domain XML its launcher defined. */
async function localRun(name: string): Promise<{ ms: number; xml: string }> {
  const state = mkdtempSync(join(tmpdir(), 'kvts-bench-cluster-local-'));
  chmodSync(state, 0o755);
  const paths = statePaths(state);
  const node = new LocalNode({ paths, podNetwork: false });
  await node.start();
  try {
    const images = new ImageStore(paths.images);
    images.import(IMAGE, DISK);
    const file = join(state, 'vm.yaml');
    writeFileSync(file, stringify(benchVm(name, 'default')));
    const objects = await loadAndAdmit([file], images, true);
    const t0 = performance.now();
    await applyObjects(node.store, objects);
    const pod = await waitFor(
      'the local launcher pod',
      async () =>
        (await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' })).items.find((p) =>
          p.metadata?.name?.includes(name),
        ),
      120_000,
      5,
    );
    const uid = pod.metadata?.uid ?? '';
    const ms = await markerOn(podEmptyDirPath(paths.pods, uid, 'sockets'), t0);
    const runtime = shortDir(podEmptyDirPath(paths.pods, uid, 'libvirt-runtime'), 48);
    const uri = `qemu+unix:///session?socket=${runtime}/run/libvirt/${findLibvirtDaemon().socket}`;
    const xml = execFileSync('virsh', ['-c', uri, 'dumpxml', '--inactive', `default_${name}`], {
      encoding: 'utf8',
    });
    await node.store.delete(VirtualMachineType, name, { namespace: 'default' });
    await waitFor(
      'the local launcher pod to go',
      async () => (await node.store.list(PodType, { namespace: 'default' })).items.length === 0,
      120_000,
      200,
    );
    return { ms, xml };
  } finally {
    await node.stop();
    rmSync(state, { recursive: true, force: true });
  }
}

/** The API server's /metrics text (over a megabyte: more than kubectlWith buffers). */
const apiMetrics = (kubeconfig: string) =>
  execFileSync(kubectlBin, ['--kubeconfig', kubeconfig, 'get', '--raw', '/metrics'], {
    encoding: 'utf8',
    maxBuffer: 64 * MiB,
  });

/** kubevirt-ts installed on the cluster, Ready, with the bench's namespace. */
async function prepareCluster(info: ClusterInfo, dir: string): Promise<CoreV1Api> {
  const kubectl = kubectlWith(info.kubeconfigPath);
  const kc = new KubeConfig();
  kc.loadFromFile(info.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  installComponents(info, dir, kubectl);
  await waitFor(
    'virt-handler and virt-controller Ready, the kvm device plugin registered',
    async () => {
      const pods = (await core.listNamespacedPod({ namespace: 'kubevirt' })).items;
      const ready = (app: string) =>
        pods.some(
          (p) =>
            p.metadata?.labels?.['kubevirt.io'] === app &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
      const n = await core.readNode({ name: info.nodeName });
      return (
        ready('virt-handler') && ready('virt-controller') && n.status?.capacity?.['devices.kubevirt.io/kvm']
      );
    },
    300_000,
    500,
  );
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await waitFor(
    'default service account',
    () => core.readNamespacedServiceAccount({ name: 'default', namespace: NS }),
    60_000,
    200,
  );
  return core;
}

/** One VM on the cluster: create -> marker, the launcher pod's working set once the guest runs. */
async function clusterRun(
  info: ClusterInfo,
  core: CoreV1Api,
  dir: string,
  name: string,
): Promise<{ ms: number; workingSetMiB: number; guestResidentMiB: number }> {
  const kubectl = kubectlWith(info.kubeconfigPath);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(benchVm(name, NS)));
  // A server-side dry run first: kubectl's first call fetches the API server's OpenAPI
  // documents, which the server builds on first request for the large KubeVirt CRDs (CPU
  // seconds on this host, once per API server): not a cost of creating a VM.
  const w0 = performance.now();
  kubectl('create', '--dry-run=server', '-f', join(dir, `${name}.json`));
  log(`warm-up dry-run create: ${Math.round(performance.now() - w0)} ms`);
  const apiBefore = apiRequestCounts(apiMetrics(info.kubeconfigPath));
  const cpuBefore = cpuSnapshot();
  const wall0 = Date.now();
  const t0 = performance.now();
  kubectl('create', '-f', join(dir, `${name}.json`));
  const created = Date.now();
  const selector = `kubevirt.io=virt-launcher,kubevirt.io/vm=${name}`;
  const pod = await waitFor(
    'the launcher pod',
    async () => (await core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items[0],
    120_000,
    20,
  );
  const uid = pod.metadata?.uid ?? '';
  const ms = await markerOn(podEmptyDirPath(join(info.stateDir, 'kubelet', 'pods'), uid, 'sockets'), t0);
  const marker = Date.now();
  const cpuAfter = cpuSnapshot();
  const apiAfter = apiRequestCounts(apiMetrics(info.kubeconfigPath));
  const timeline = clusterTimeline(
    {
      stateDir: info.stateDir,
      namespace: NS,
      vmName: name,
      pod: await core.readNamespacedPod({ namespace: NS, name: pod.metadata?.name ?? '' }),
      t0: wall0,
      marker,
      cpuBefore,
      cpuAfter,
    },
    JSON.parse(kubectl('get', 'vmi', '-n', NS, name, '-o', 'json')),
    { created, vm: JSON.parse(kubectl('get', 'vm', '-n', NS, name, '-o', 'json')), apiBefore, apiAfter },
  );
  log(`timeline of ${name} (ms after kubectl create):\n${timeline.join('\n')}`);
  // Settle: the launcher's work right after the boot is part of what a pod costs.
  await new Promise((r) => setTimeout(r, 3_000));
  const workingSetMiB = workingSet(podMemoryCgroup(uid)) / MiB;
  const qemu = Number(execFileSync('pgrep', ['-f', `guest=${NS}_${name},`], { encoding: 'utf8' }).trim());
  const guestResidentMiB = guestResident(qemu, GUEST_MIB * MiB) / MiB;
  kubectl('delete', '-n', NS, 'vm', name, '--wait=false');
  await waitFor(
    'the launcher pod to go',
    async () => (await core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items.length === 0,
    180_000,
    500,
  );
  return { ms, workingSetMiB, guestResidentMiB };
}

/** CPU seconds a process has used (utime + stime from /proc/<pid>/stat, 100 ticks a second). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/**
 * Waits until the freshly installed cluster's API server idles (under 10% of a core for
 * two seconds running; at most 90 s). Right after the install it rebuilds its OpenAPI
 * documents for the large KubeVirt CRDs and takes most of a core for 20-30 s, which a
 * TCG guest booting on a 2-core host would pay for: a start-up cost of the install, not
 * of running a VM.
 */
async function apiServerSettled(stateDir: string): Promise<void> {
  const pid = Number(
    execFileSync('pgrep', ['-f', `kube-apiserver.*${stateDir}`], { encoding: 'utf8' })
      .trim()
      .split('\n')[0],
  );
  const t0 = performance.now();
  let quiet = 0;
  let last = cpuSeconds(pid);
  while (quiet < 2 && performance.now() - t0 < 90_000) {
    await new Promise((r) => setTimeout(r, 1_000));
    const now = cpuSeconds(pid);
    quiet = now - last < 0.1 ? quiet + 1 : 0;
    last = now;
  }
  log(`API server settled after the install: ${Math.round(performance.now() - t0)} ms`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('needs root (the cluster, local mode, libvirt)');
  const missing = missingPieces();
  if (missing.length) throw new Error(`the cluster cannot start: ${missing.join('; ')}`);
  if (!existsSync(join(repo, 'dist', 'cli', 'kubevirt-ts.js'))) throw new Error('run npm run build first');
  if (!existsSync(DISK)) throw new Error(`no tiny guest disk at ${DISK}: run scripts/guest/build.sh`);
  const runs = Number(process.env.BENCH_CLUSTER_RUNS ?? 1);
  const skipCluster = process.env.BENCH_CLUSTER_SKIP === '1'; // local mode and virsh only
  const loadBefore = loadavg();
  const stateDir = testStateDir();
  const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-cluster-'));
  const info = skipCluster
    ? undefined
    : await up({
        stateDir,
        bridge: TEST_BRIDGE,
        podSubnet: TEST_POD_SUBNET,
        log,
        traceLogs: process.env.BENCH_CLUSTER_TRACE === '1',
      });
  const cluster: Awaited<ReturnType<typeof clusterRun>>[] = [];
  const local: number[] = [];
  const virsh: number[] = [];
  try {
    const core = info ? await prepareCluster(info, dir) : undefined;
    if (info) await apiServerSettled(stateDir);
    // The three alternate, so each sees the same host load (the cluster idles meanwhile).
    for (let i = 0; i < runs; i++) {
      if (info && core) {
        cluster.push(await clusterRun(info, core, dir, `${NAME}-${i}`));
        log(`cluster: ${cluster[i].ms} ms`);
      }
      const l = await localRun(`${NAME}-${i}`);
      local.push(l.ms);
      log(`local: ${l.ms} ms`);
      virsh.push(await virshRun(l.xml, DISK, MARKER_LINE));
      log(`virsh: ${virsh[i]} ms`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (info) {
      const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
      if (left.length) log(`the cluster left behind: ${left.join('; ')}`);
    }
  }
  const l = median(local);
  const w = median(virsh);
  console.log(
    `${runs} run(s) each, alternating, TCG (medians); load average before ${loadBefore}, after ${loadavg()}`,
  );
  console.log(`local mode: ${local.join(', ')} ms; virsh create: ${virsh.join(', ')} ms`);
  if (!cluster.length) return;
  const c = median(cluster.map((r) => r.ms));
  // The guest's RAM in the pod's working set is what QEMU has resident of it (a TCG guest
  // touches its pages as it goes); the rest is the pod's own cost.
  const overhead = median(cluster.map((r) => r.workingSetMiB - r.guestResidentMiB));
  console.log(`cluster: ${cluster.map((r) => r.ms).join(', ')} ms`);
  for (const r of cluster)
    console.log(
      `launcher pod working set ${r.workingSetMiB.toFixed(1)} MiB, of it the ${GUEST_MIB} MiB guest's RAM resident ${r.guestResidentMiB.toFixed(1)} MiB (working set minus the whole ${GUEST_MIB} MiB: ${(r.workingSetMiB - GUEST_MIB).toFixed(1)} MiB)`,
    );
  console.log(
    `cluster - local: ${c - l} ms (target <= 1500 ms); launcher pod overhead target <= 150 MiB (upstream budgets 240 MiB)`,
  );
  console.log(
    `BENCH cluster create_to_marker_ms=${c} local_create_to_marker_ms=${l} virsh_ms=${w} launcher_pod_overhead_mib=${overhead.toFixed(1)}`,
  );
}

/** The machine-wide lock every user of the one kubelet takes (see docs/cluster.md). */
const LOCK = '/tmp/kvts-cluster.lock';
const LOCKED_ENV = 'KUBEVIRT_TS_BENCH_CLUSTER_LOCKED';

if (process.env[LOCKED_ENV] !== '1') {
  // Again under the lock (`npm run bench` runs this with the other benches).
  log(`waiting for ${LOCK}`);
  const child = spawn('flock', [LOCK, process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, [LOCKED_ENV]: '1' },
  });
  child.once('exit', (code) => process.exit(code ?? 1));
} else {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
