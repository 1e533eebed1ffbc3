/**
 * `npm run bench:migration` (root; the npm script takes /tmp/kvts-cluster.lock; build and
 * `scripts/cluster/setup.sh` first): the two-node cluster of the tests (`up --nodes 2`,
 * the components from the rendered manifests), the tiny guest (examples/vm-tiny-containerdisk.yaml
 * without its network, so the bare reference runs the same domain; containerDisk: a block
 * migration) booted on node A, then four kubevirt-ts migrations between the nodes, back
 * and forth: with the migration proxies' mutual TLS, then `disableTLS`, twice each (each
 * from the VirtualMachineInstanceMigration's creation to `Succeeded`). libvirt's completed
 * job statistics of each (`virsh domjobinfo --completed` in the target launcher's daemon)
 * give the guest's downtime, the job's time and the data moved. The cluster goes down;
 * then the same domain XML is migrated by a bare `virsh migrate` (./migration-virsh.ts).
 *
 * Each migration's timeline (./migration-timeline.ts) goes to stderr; BENCH_MIGRATION_TRACE=1
 * brings the cluster up with `traceLogs` (the kubelet's and containerd's lines in it too);
 * BENCH_MIGRATION_LIBVIRT_FILTERS='1:qemu.qemu_migration 3:*' (for one) runs the launchers'
 * daemons with those log filters and keeps both launcher logs of each migration.
 *
 * Prints `BENCH migration total_ms=<plain> downtime_ms= mib_transferred= virsh_total_ms=
 * tls_total_ms= job_ms= virsh_job_ms= virsh_downtime_ms=` (kubevirt-ts figures: the better
 * of the two runs of each kind; downtime and MiB: of the better plain run).
 */
import { execSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { down } from '../scripts/cluster/down';
import { up } from '../scripts/cluster/up';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../src/api/generated/types';
import {
  clusterUnavailableReason,
  TEST_BRIDGE,
  TEST_POD_SUBNET,
  testStateDir,
} from '../test/support/cluster';
import { componentsReady, installComponents } from '../test/support/cluster-install';
import { kubectlBin, kubectlWith, patchKubeVirtArgs } from '../test/support/cluster-pods';
import { BOOT_MARKER } from '../test/support/guest';
import { cacheDir } from '../test/support/integration';
import { secondLibvirtdUnavailable } from '../test/support/second-libvirtd';
import { waitFor } from '../test/support/wait';
import { formatTimeline, MigrationWatch, migrationLogLines, nodeDirs } from './migration-timeline';
import { bareVirshMigration, type JobFigures, parseCompletedJob } from './migration-virsh';

const why = clusterUnavailableReason() ?? secondLibvirtdUnavailable();
if (why) throw new Error(`bench:migration: ${why}`);
const DISK = join(cacheDir, 'guest', 'current', 'boot.qcow2');
if (!existsSync(DISK))
  throw new Error(`bench:migration: no tiny guest disk at ${DISK}: run scripts/guest/build.sh`);
const repo = new URL('..', import.meta.url).pathname;
const NS = 'default';
const VM = 'bench-mig';
const MARKER_LINE = new RegExp(`${BOOT_MARKER}[^\\n]*uptime=[0-9.]+\\s`);
const log = (m: string) => process.stderr.write(`[bench:migration] ${m}\n`);
const LIBVIRT_FILTERS = process.env.BENCH_MIGRATION_LIBVIRT_FILTERS;
/** BENCH_MIGRATION_MAX_DOWNTIME_MS: the KubeVirt CR's `maxDowntimeMs` for kubevirt-ts's migrations (the bare one keeps QEMU's 300). */
const MAX_DOWNTIME = process.env.BENCH_MIGRATION_MAX_DOWNTIME_MS
  ? { maxDowntimeMs: Number(process.env.BENCH_MIGRATION_MAX_DOWNTIME_MS) }
  : {};

const stateDir = testStateDir();
const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-migration-'));
const info = await up({
  stateDir,
  bridge: TEST_BRIDGE,
  podSubnet: TEST_POD_SUBNET,
  nodes: 2,
  traceLogs: process.env.BENCH_MIGRATION_TRACE === '1',
  log: (l) => process.stderr.write(`[cluster] ${l}\n`),
});
const kubectl = kubectlWith(info.kubeconfigPath);
const kc = new KubeConfig();
kc.loadFromFile(info.kubeconfigPath);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const watch = new MigrationWatch(kc, NS);
const get = async <T>(plural: string, name: string) =>
  (await custom
    .getNamespacedCustomObject({ group: 'kubevirt.io', version: 'v1', namespace: NS, plural, name })
    .catch(() => undefined)) as T | undefined;

/** The example VM without its network (the bare daemon has no pod network to give it). */
function benchVm(): Record<string, unknown> {
  const vm = parse(readFileSync(join(repo, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8'));
  vm.metadata = { name: VM, namespace: NS };
  const spec = vm.spec.template.spec;
  delete spec.networks;
  delete spec.domain.devices.interfaces;
  spec.domain.devices.autoattachPodInterface = false;
  spec.terminationGracePeriodSeconds = 0;
  vm.spec.template.metadata.labels = { 'kubevirt.io/vm': VM };
  // BENCH_MIGRATION_LIBVIRT_FILTERS: the launchers' daemons log at these filters, and each
  // migration's two launcher logs are kept (see LIBVIRT_LOGS below).
  if (LIBVIRT_FILTERS)
    vm.spec.template.metadata.annotations = { 'kubevirt.io/libvirt-log-filters': LIBVIRT_FILTERS };
  return vm;
}

/** Runs `cmd` with busybox sh in a launcher pod's compute container. */
const inLauncher = (pod: string, cmd: string) =>
  kubectl('exec', '-n', NS, pod, '-c', 'compute', '--', 'busybox', 'sh', '-c', cmd);

/** `virsh <args> <the domain>` against a launcher's own (session) daemon. */
function launcherVirsh(pod: string, args: string): string {
  const dom = `${NS}_${VM}`;
  return inLauncher(
    pod,
    `for s in virtqemud-sock libvirt-sock; do p=/var/run/libvirt/run/libvirt/$s; ` +
      `[ -S $p ] && exec virsh -c "qemu+unix:///session?socket=$p" ${args} ${dom}; done; ` +
      'echo no libvirt socket >&2; exit 1',
  );
}

/** The completed migration job as the target launcher's daemon recorded it. */
const launcherJob = (pod: string) => launcherVirsh(pod, 'domjobinfo --completed --rawstats');

interface Run extends JobFigures {
  mode: string;
  from: string;
  to: string;
}

/** One migration with the proxies in `tls` mode; its figures. */
async function migrate(i: number, tls: boolean, vmiUid: string): Promise<Run> {
  kubectl(
    ...patchKubeVirtArgs({ spec: { configuration: { migrations: { disableTLS: !tls, ...MAX_DOWNTIME } } } }),
  );

  // virt-controller copies disableTLS into each migration at hand-over: let the change reach it.
  await new Promise((r) => setTimeout(r, 3_000));
  const name = `bench-mig-${i}`;
  writeFileSync(
    join(dir, `${name}.yaml`),
    JSON.stringify({
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstanceMigration',
      metadata: { name, namespace: NS },
      spec: { vmiName: VM },
    }),
  );
  const t0 = performance.now();
  const t0Epoch = Date.now();
  kubectl('create', '-f', join(dir, `${name}.yaml`));
  await waitFor(
    `${name} Succeeded`,
    async () => {
      const m = await get<VirtualMachineInstanceMigration>('virtualmachineinstancemigrations', name);
      if (m?.status?.phase === 'Failed') throw new Error(`${name} Failed: ${JSON.stringify(m.status)}`);
      return m?.status?.phase === 'Succeeded' ? true : undefined;
    },
    180_000,
    100,
  );
  const totalMs = Math.round(performance.now() - t0);
  const state = await waitFor(
    `${name}'s final state`,
    async () => {
      const m = await get<VirtualMachineInstanceMigration>('virtualmachineinstancemigrations', name);
      return m?.status?.migrationState?.completed ? m.status.migrationState : undefined;
    },
    30_000,
    200,
  );
  const job = parseCompletedJob(launcherJob(state.targetPod ?? ''));
  if (LIBVIRT_FILTERS) {
    // Both launchers' logs (the daemons' lines with them), for reading the switch-over.
    for (const [side, pod] of [
      ['source', state.sourcePod],
      ['target', state.targetPod],
    ] as const) {
      const file = join(dir, `${name}-${side}.log`);
      // Straight into the file: debug logs outgrow a captured stdout.
      const fd = openSync(file, 'w');
      const r = spawnSync(
        kubectlBin,
        ['--kubeconfig', info.kubeconfigPath, 'logs', '-n', NS, pod ?? '', '-c', 'compute'],
        {
          stdio: ['ignore', fd, 'pipe'],
          timeout: 60_000,
        },
      );
      closeSync(fd);
      log(
        r.status === 0
          ? `${name}: ${side} launcher log in ${file}`
          : `${name}: no ${side} launcher log: ${r.stderr}`,
      );
    }
  }
  // Which transport the target's proxies used, from its handler's report of this migration.
  const handler = (
    await core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: 'kubevirt.io=virt-handler' })
  ).items.find((p) => p.spec?.nodeName === state.targetNode);
  const closed = new RegExp(`migration ${vmiUid}: target proxies closed \\((TLS|plain TCP)`, 'g');
  const modes = await waitFor(
    'the target proxies report',
    () => {
      const all = [
        ...kubectl('logs', '-n', 'kubevirt', handler?.metadata?.name ?? '', '-c', 'virt-handler').matchAll(
          closed,
        ),
      ];
      return all.length ? all : undefined;
    },
    30_000,
    500,
  );
  const mode = modes[modes.length - 1][1];
  if (mode !== (tls ? 'TLS' : 'plain TCP'))
    throw new Error(`${name}: the proxies used ${mode}, not ${tls ? 'TLS' : 'plain'}`);
  const nodes = nodeDirs(
    stateDir,
    info.nodeName,
    (info.extraNodes ?? []).map((n) => n.nodeName),
  );
  const timeline = formatTimeline(
    [
      { at: t0Epoch, source: 'bench', text: `kubectl create ${name}` },
      { at: t0Epoch + totalMs, source: 'bench', text: `${name} seen Succeeded` },
      ...watch.lines(t0Epoch),
      ...migrationLogLines({
        stateDir,
        nodes,
        vmName: VM,
        targetPod: state.targetPod ?? '',
        targetNode: state.targetNode ?? '',
      }),
    ],
    t0Epoch,
    t0Epoch + totalMs,
  );
  log(`timeline of ${name} (ms after kubectl create):\n${timeline.join('\n')}`);
  const run = { totalMs, ...job, mode, from: state.sourceNode ?? '', to: state.targetNode ?? '' };
  log(
    `${name} ${run.from} -> ${run.to} (${mode}): ${totalMs} ms; job ${job.jobMs} ms, downtime ${job.downtimeMs} ms, ${job.mib.toFixed(1)} MiB`,
  );
  return run;
}

let runs: Run[] = [];
let xml = '';
try {
  const nodeB = info.extraNodes?.[0]?.nodeName ?? '';
  // The components on node A (node B only runs its handler).
  kubectl('cordon', nodeB);
  // BENCH_MIGRATION_HANDLER_V=4: the handlers' debug lines (each launcher event) in the timeline.
  const handlerV = process.env.BENCH_MIGRATION_HANDLER_V;
  installComponents(info, dir, kubectl, handlerV ? { 'virt-handler': [`--v=${handlerV}`] } : {});
  await componentsReady(core, [info.nodeName, nodeB]);
  await watch.start();
  writeFileSync(join(dir, 'vm.yaml'), JSON.stringify(benchVm()));
  kubectl('apply', '-f', join(dir, 'vm.yaml'));
  const vmi = await waitFor(
    'the VMI Running and live-migratable',
    async () => {
      const v = await get<VirtualMachineInstance>('virtualmachineinstances', VM);
      const ok = v?.status?.conditions?.some((c) => c.type === 'LiveMigratable' && c.status === 'True');
      return v?.status?.phase === 'Running' && ok ? v : undefined;
    },
    300_000,
    1_000,
  );
  kubectl('uncordon', nodeB);
  const uid = vmi.metadata?.uid ?? '';
  const source = (
    await core.listNamespacedPod({ namespace: NS, labelSelector: `kubevirt.io/created-by=${uid}` })
  ).items[0];
  await waitFor(
    'the boot marker',
    () =>
      Number(
        inLauncher(
          source.metadata?.name ?? '',
          `busybox grep -c ${BOOT_MARKER} /var/run/kubevirt-private/${uid}/virt-serial0-log || true`,
        ).trim(),
      ) > 0 || undefined,
    240_000,
    1_000,
  );
  for (const [i, tls] of [true, false, true, false].entries()) runs.push(await migrate(i, tls, uid));
  if (process.env.BENCH_MIGRATION_DIAG === '1') {
    // The launcher's sockets directory as its node sees it (notify pipe, command socket).
    const st = (await get<VirtualMachineInstance>('virtualmachineinstances', VM))?.status?.migrationState;
    const p = (
      await core.listNamespacedPod({ namespace: NS, labelSelector: `kubevirt.io/created-by=${uid}` })
    ).items.find((x) => x.metadata?.name === st?.targetPod);
    const nodeDir =
      st?.targetNode === info.nodeName ? stateDir : join(stateDir, 'nodes', st?.targetNode ?? '');
    const sockets = join(
      nodeDir,
      'kubelet',
      'pods',
      p?.metadata?.uid ?? '',
      'volumes',
      'kubernetes.io~empty-dir',
      'sockets',
    );
    const sh = (c: string) => {
      try {
        return execSync(c, { encoding: 'utf8' });
      } catch (e) {
        return String((e as Error).message);
      }
    };
    log(`diag: host ${sockets}:\n${sh(`ls -la ${sockets}`)}`);
    log(
      `diag: in the launcher:\n${inLauncher(st?.targetPod ?? '', 'ls -la /var/run/kubevirt/sockets/ /var/run/kubevirt/ 2>&1; id')}`,
    );
    const h = (
      await core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: 'kubevirt.io=virt-handler' })
    ).items.find((x) => x.spec?.nodeName === st?.targetNode);
    log(
      `diag: in the handler:\n${sh(`kubectl --kubeconfig ${info.kubeconfigPath} exec -n kubevirt ${h?.metadata?.name} -c virt-handler -- sh -c 'ls -la /var/run/kubevirt/ /tmp/kvts-s/ 2>&1; for l in /tmp/kvts-s/*; do ls -la $l/; done 2>&1 | head -40'`)}`,
    );
  }
  // The domain as the last target's daemon defined it (libvirt's own form, as bench:cluster's).
  const final = await get<VirtualMachineInstance>('virtualmachineinstances', VM);
  const pod = final?.status?.migrationState?.targetPod ?? '';
  xml = launcherVirsh(pod, 'dumpxml --inactive');
  if (!xml.includes('<domain')) throw new Error(`no domain XML from ${pod}: ${xml.slice(0, 200)}`);
} finally {
  watch.stop();
  if (LIBVIRT_FILTERS) log(`launcher logs kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
  await down({ stateDir, bridge: TEST_BRIDGE, log: (l) => process.stderr.write(`[cluster] ${l}\n`) });
}

// Kept for a look at what the reference ran.
writeFileSync(join(tmpdir(), 'kvts-bench-migration-domain.xml'), xml);
const bare = await bareVirshMigration(xml, DISK, MARKER_LINE);
log(
  `bare virsh migrate: ${bare.totalMs} ms; job ${bare.jobMs} ms, downtime ${bare.downtimeMs} ms, ${bare.mib.toFixed(1)} MiB`,
);
const best = (tls: boolean) =>
  runs.filter((r) => (r.mode === 'TLS') === tls).reduce((a, b) => (b.totalMs < a.totalMs ? b : a));
const plain = best(false);
const tls = best(true);
runs = [];
process.stdout.write(
  `BENCH migration total_ms=${plain.totalMs} downtime_ms=${plain.downtimeMs} mib_transferred=${plain.mib.toFixed(1)} ` +
    `virsh_total_ms=${bare.totalMs} tls_total_ms=${tls.totalMs} job_ms=${plain.jobMs} ` +
    `virsh_job_ms=${bare.jobMs} virsh_downtime_ms=${bare.downtimeMs} tls_downtime_ms=${tls.downtimeMs}\n`,
);
