/**
 * `kubectl drain` on the two-node cluster (issue 26, "Eviction and drain"), run by
 * migration.serial.test.ts after its migration from node A to node B, on that cluster:
 * the control plane runs on node A, so draining node B evicts only launcher pods (the
 * handler is a DaemonSet). On node B: the migrated VM (evictionStrategy LiveMigrate), a
 * VMI with evictionStrategy LiveMigrate that is not live-migratable (a bridge binding on
 * the pod network: LiveMigratable=False, InterfaceNotLiveMigratable), and a VMI with no
 * strategy (the cluster's default, None).
 *
 * `kubectl drain B --ignore-daemonsets --delete-emptydir-data`: virt-api's eviction
 * webhook turns the VM's eviction into an evacuation (an evacuation migration moves it
 * back to A, the same guest: no boot marker on either later console, its uptime older
 * than its first boot), lets the strategy-less VMI's pod be evicted (the VMI stops,
 * upstream's behaviour) and keeps refusing the other VMI's with upstream's reason, which
 * drain prints as it retries. Once that VMI is deleted (what its owner does about the
 * refusal), the drain completes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../src/api/generated/types';
import { waitFor } from '../support/wait';
import { run, tail } from './background-kubectl';
import { consoleAnswers } from './operator-cluster';

/** What the drain case needs from the migration test. */
export interface DrainContext {
  info: ClusterInfo;
  dir: string;
  kubectl: (...args: string[]) => string;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  ns: string;
  /** The migrated VM (its VMI has the same name), Running on nodeB. */
  vm: string;
  nodeA: string;
  nodeB: string;
  /** Boot markers on a launcher pod's serial log (0 when unreadable). */
  markers: (pod: V1Pod, vmiUid: string) => number;
  /** performance.now() when the guest's one boot was seen on node A. */
  booted: number;
  /** The first migration's QEMU stream (no policy): bytes and seconds, printed for reference. */
  unlimited: { bytes: number; seconds: number };
}

const STUCK = 'vmi-nomigrate';
const NONE = 'vmi-nostrategy';
/** upstream's refusal for a LiveMigrate VMI that is not live-migratable (pod-eviction-admitter.go). */
const REFUSAL = `VMI ${STUCK} is configured with an eviction strategy but is not live-migratable`;

/** The drain of node B described above, with its assertions. */
export async function drainCase(c: DrainContext): Promise<void> {
  const { kubectl, ns } = c;
  const vmis = (name: string) =>
    c.custom
      .getNamespacedCustomObject({
        group: 'kubevirt.io',
        version: 'v1',
        namespace: ns,
        plural: 'virtualmachineinstances',
        name,
      })
      .catch(() => undefined) as Promise<VirtualMachineInstance | undefined>;
  const before = await vmis(c.vm);
  const uid = before?.metadata?.uid ?? '';
  expect(before?.status?.nodeName).toBe(c.nodeB);

  for (const v of [stuckVmi(ns, c.nodeB), noneVmi(ns, c.nodeB)]) {
    writeFileSync(join(c.dir, `${v.metadata.name}.yaml`), JSON.stringify(v));
    kubectl('create', '-f', join(c.dir, `${v.metadata.name}.yaml`));
  }
  const stuck = await waitFor(
    `${STUCK} Running on node B, not live-migratable`,
    async () => {
      const v = await vmis(STUCK);
      const cond = v?.status?.conditions?.find((x) => x.type === 'LiveMigratable');
      return v?.status?.phase === 'Running' && cond?.status === 'False' ? { v, cond } : undefined;
    },
    240_000,
    1_000,
  );
  expect(stuck.v.status?.nodeName).toBe(c.nodeB);
  expect(stuck.cond.reason).toBe('InterfaceNotLiveMigratable');
  const none = await waitFor(
    `${NONE} Running on node B`,
    async () => {
      const v = await vmis(NONE);
      return v?.status?.phase === 'Running' ? v : undefined;
    },
    240_000,
    1_000,
  );
  expect(none.status?.nodeName).toBe(c.nodeB);
  expect(none.spec.evictionStrategy).toBeUndefined();

  // A MigrationPolicy for the VM's label: its evacuation runs at 16 MiB/s.
  writeFileSync(join(c.dir, 'policy.yaml'), JSON.stringify(POLICY));
  kubectl('create', '-f', join(c.dir, 'policy.yaml'));

  const t0 = performance.now();
  const drain = run([
    '--kubeconfig',
    c.info.kubeconfigPath,
    'drain',
    c.nodeB,
    '--ignore-daemonsets',
    '--delete-emptydir-data',
    '--timeout=300s',
  ]);
  // Every launcher pod change meanwhile: a target pod that fails is deleted at once, so its
  // last status (the compute container's exit) is only seen here.
  const podWatch = run([
    '--kubeconfig',
    c.info.kubeconfigPath,
    'get',
    'pods',
    '-n',
    ns,
    '-l',
    'kubevirt.io=virt-launcher',
    '--watch',
    '-o',
    'jsonpath={.metadata.name} {.spec.nodeName} {.status.phase} deleting={.metadata.deletionTimestamp} ' +
      '{range .status.containerStatuses[*]}{.name}={.state}{" "}{end}{"\n"}',
  ]);
  /** What the cluster looked like, when a wait fails or an evacuation attempt failed. */
  const diagnose = () => {
    const handlers = (
      kubectl('get', 'pods', '-n', 'kubevirt', '-l', 'kubevirt.io=virt-handler', '-o', 'name') || ''
    )
      .split('\n')
      .filter(Boolean);
    for (const args of [
      ['get', 'vmi,vmim', '-n', ns, '-o', 'wide'],
      ['get', 'pods', '-n', ns, '-o', 'wide'],
      ['get', 'vmi', c.vm, '-n', ns, '-o', 'jsonpath={.status.evacuationNodeName} {.status.migrationState}'],
      ['get', 'events', '-n', ns, '--sort-by=.lastTimestamp'],
      ...handlers.map((h) => ['logs', '-n', 'kubevirt', h, '-c', 'virt-handler', '--tail=60']),
    ]) {
      try {
        process.stderr.write(`[drain] kubectl ${args.join(' ')}:\n${tail(kubectl(...args), 60)}\n`);
      } catch (e) {
        process.stderr.write(`[drain] ${(e as Error).message}\n`);
      }
    }
    process.stderr.write(`[drain] launcher pods as they changed:\n${tail(podWatch.out(), 40)}\n`);
    process.stderr.write(`[drain] kubectl drain so far:\n${tail(drain.out())}\n`);
  };
  try {
    // The VM moves back to node A through an evacuation migration. Upstream retries a failed
    // one (a new migration, after a backoff): the first that succeeds counts; each failure is
    // explained here (at most two are tolerated).
    const failed = new Set<string>();
    /** The compute log of each migration target pod whose compute ended, read before the pod goes. */
    const targetLogs = new Map<string, string>();
    const readEndedTargets = async () => {
      const pods = await c.core.listNamespacedPod({
        namespace: ns,
        labelSelector: `kubevirt.io/created-by=${uid}`,
      });
      for (const p of pods.items) {
        const name = p.metadata?.name ?? '';
        const target = p.metadata?.labels?.['kubevirt.io/migrationJobUID'];
        const ended = p.status?.containerStatuses?.find((x) => x.name === 'compute')?.state?.terminated;
        if (!target || !ended || targetLogs.has(name)) continue;
        let log: string;
        try {
          log = kubectl('logs', '-n', ns, name, '-c', 'compute', '--tail=40');
        } catch (e) {
          log = (e as Error).message;
        }
        targetLogs.set(name, `compute ended ${JSON.stringify(ended)}:\n${log}`);
      }
    };
    const evacuation = await waitFor(
      'the evacuation migration Succeeded',
      async () => {
        await readEndedTargets().catch(() => undefined);
        const list = (await c.custom.listNamespacedCustomObject({
          group: 'kubevirt.io',
          version: 'v1',
          namespace: ns,
          plural: 'virtualmachineinstancemigrations',
        })) as { items: VirtualMachineInstanceMigration[] };
        const ours = list.items.filter(
          (x) => x.spec.vmiName === c.vm && x.metadata?.name?.startsWith('kubevirt-evacuation-'),
        );
        for (const m of ours.filter((x) => x.status?.phase === 'Failed')) {
          const name = m.metadata?.name ?? '';
          if (failed.has(name)) continue;
          failed.add(name);
          process.stderr.write(`[drain] evacuation attempt ${name} Failed: ${JSON.stringify(m.status)}\n`);
          for (const [pod, log] of targetLogs) process.stderr.write(`[drain] target pod ${pod}: ${log}\n`);
          diagnose();
          if (failed.size > 2)
            throw new Error(`evacuation Failed ${failed.size} times: ${JSON.stringify(m.status)}`);
        }
        return ours.find((x) => x.status?.phase === 'Succeeded');
      },
      240_000,
      1_000,
    );
    expect(evacuation.metadata?.annotations?.['kubevirt.io/evacuationMigration']).toBe(c.nodeB);
    process.stderr.write(
      `[drain] ${c.vm} evacuated to node A ${Math.round(performance.now() - t0)} ms after the drain began\n`,
    );
    await policyTookEffect(c, evacuation, uid);
    // The strategy-less VMI was evicted: it stopped (upstream's None).
    const stopped = await waitFor(
      `${NONE} stopped`,
      async () => {
        const v = await vmis(NONE);
        return v?.status?.phase === 'Failed' || v?.status?.phase === 'Succeeded' ? v : undefined;
      },
      120_000,
      500,
    );
    process.stderr.write(`[drain] ${NONE} ended ${stopped.status?.phase}\n`);
    // The non-migratable VMI's eviction is refused with the reason, again and again; it runs on.
    await waitFor(
      'drain printing the refusal twice',
      () => (drain.out().split(REFUSAL).length > 2 ? true : undefined),
      60_000,
      500,
    );
    expect((await vmis(STUCK))?.status?.phase).toBe('Running');
    expect(drain.code()).toBeUndefined();

    // Its owner stops it: the drain completes.
    kubectl('delete', 'vmi', STUCK, '-n', ns, '--wait=false');
    const { code } = await waitFor(
      'the drain to end',
      () => (drain.code() === undefined ? undefined : { code: drain.code() }),
      120_000,
      500,
    );
    process.stderr.write(`[drain] kubectl drain output:\n${tail(drain.out())}\n`);
    expect(code).toBe(0);
    expect(drain.out()).toContain(`node/${c.nodeB} drained`);
  } catch (e) {
    diagnose();
    throw e;
  } finally {
    drain.kill();
    podWatch.kill();
  }
  // The same VMI on node A, its evacuation over, no new boot.
  const after = await vmis(c.vm);
  expect(after?.metadata?.uid).toBe(uid);
  expect(after?.status?.phase).toBe('Running');
  expect(after?.status?.nodeName).toBe(c.nodeA);
  expect(after?.status?.evacuationNodeName).toBeUndefined();
  const onB = (
    await c.core.listNamespacedPod({ namespace: ns, labelSelector: 'kubevirt.io=virt-launcher' })
  ).items.filter((p) => p.spec?.nodeName === c.nodeB);
  expect(onB.map((p) => p.metadata?.name)).toEqual([]);
  const launcherA = (
    await c.core.listNamespacedPod({ namespace: ns, labelSelector: `kubevirt.io/created-by=${uid}` })
  ).items.find((p) => p.spec?.nodeName === c.nodeA && p.status?.phase === 'Running');
  if (!launcherA) throw new Error('no running launcher of the VM on node A');
  expect(c.markers(launcherA, uid)).toBe(0);
  const uptime = await consoleAnswers(c.info, c.vm, {
    expr: `$(read u r </proc/uptime; echo \${u%.*})`,
    tag: 'DRN',
  });
  expect(uptime).toBeGreaterThanOrEqual(Math.floor((performance.now() - c.booted) / 1000) - 1);
  kubectl('uncordon', c.nodeB);
}

const POLICY = {
  apiVersion: 'migrations.kubevirt.io/v1alpha1',
  kind: 'MigrationPolicy',
  metadata: { name: 'drain-slow' },
  spec: {
    bandwidthPerMigration: '16Mi',
    selectors: { virtualMachineInstanceSelector: { 'kubevirt.io/vm': 'vm-tiny-cd' } },
  },
};
const MiB = 1024 * 1024;

/**
 * The policy is the evacuation's configuration and limited its memory stream: the bytes
 * node A's handler received on QEMU's stream over the migration's seconds (its
 * timestamps, to the second: one more second allowed) stay within 16 MiB/s (10% slack).
 */
async function policyTookEffect(
  c: DrainContext,
  m: VirtualMachineInstanceMigration,
  vmiUid: string,
): Promise<void> {
  const final = await waitFor(
    "the evacuation's final state",
    async () => {
      const x = (await c.custom
        .getNamespacedCustomObject({
          group: 'kubevirt.io',
          version: 'v1',
          namespace: c.ns,
          plural: 'virtualmachineinstancemigrations',
          name: m.metadata?.name ?? '',
        })
        .catch(() => undefined)) as VirtualMachineInstanceMigration | undefined;
      return x?.status?.migrationState?.completed ? x.status.migrationState : undefined;
    },
    30_000,
    500,
  );
  expect(final.migrationPolicyName).toBe('drain-slow');
  expect(final.migrationConfiguration).toMatchObject({ bandwidthPerMigration: '16Mi', progressTimeout: 150 });
  const handlerA = (
    await c.core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: 'kubevirt.io=virt-handler' })
  ).items.find((p) => p.spec?.nodeName === c.nodeA);
  const closed = new RegExp(
    `migration ${vmiUid}: target proxies closed \\((?:TLS(?:, OpenSSL relay)?|plain TCP(?:, kernel relay)?); bytes by key port 0: \\d+ out, \\d+ in; 49152: (\\d+) out`,
  );
  const bytes = await waitFor(
    "node A's migration proxy report",
    () => {
      const log = c.kubectl('logs', '-n', 'kubevirt', handlerA?.metadata?.name ?? '', '-c', 'virt-handler');
      // The last report: an earlier, failed attempt may have closed its own proxies.
      const hits = [...log.matchAll(new RegExp(closed, 'g'))];
      return hits.length ? Number(hits[hits.length - 1][1]) : undefined;
    },
    60_000,
    1_000,
  );
  const seconds = (Date.parse(final.endTimestamp ?? '') - Date.parse(final.startTimestamp ?? '')) / 1000;
  const rate = bytes / MiB / (seconds + 1);
  const u = c.unlimited;
  process.stderr.write(
    `[drain] evacuation under the policy: ${(bytes / MiB).toFixed(1)} MiB in ${seconds} s (+1): ${rate.toFixed(1)} MiB/s; ` +
      `the first migration, no policy: ${(u.bytes / MiB).toFixed(1)} MiB in ${u.seconds} s\n`,
  );
  expect(bytes).toBeGreaterThan(32 * MiB);
  expect(rate).toBeLessThanOrEqual(16 * 1.1);
}

/** The tiny guest as a VMI pinned to `node`, with `spec` laid over. */
function tinyVmi(ns: string, name: string, node: string, iface: object, spec: object = {}) {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name, namespace: ns },
    spec: {
      terminationGracePeriodSeconds: 0,
      nodeSelector: { 'kubernetes.io/hostname': node },
      domain: {
        devices: {
          autoattachGraphicsDevice: false,
          disks: [{ name: 'boot', disk: { bus: 'virtio' } }],
          interfaces: [{ name: 'default', ...iface }],
        },
        resources: { requests: { memory: '128Mi' } },
      },
      networks: [{ name: 'default', pod: {} }],
      volumes: [
        {
          name: 'boot',
          containerDisk: {
            image: 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest',
            imagePullPolicy: 'Never',
          },
        },
      ],
      ...spec,
    },
  };
}

/** LiveMigrate, but the bridge binding on the pod network makes it not live-migratable. */
const stuckVmi = (ns: string, node: string) =>
  tinyVmi(ns, STUCK, node, { bridge: {} }, { evictionStrategy: 'LiveMigrate' });
/** No strategy of its own: the cluster's default (none set: None). */
const noneVmi = (ns: string, node: string) => tinyVmi(ns, NONE, node, { masquerade: {} });
