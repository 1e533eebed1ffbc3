/**
 * `kubectl drain` on the two-node cluster (issue 26, "Eviction and drain"), run by
 * migration.serial.test.ts after its migration from node A to node B, on that cluster:
 * the control plane runs on node A, so draining node B evicts only launcher pods (the
 * handler is a DaemonSet). On node B: the migrated VM (evictionStrategy LiveMigrate) and
 * a VMI that is not live-migratable (a bridge binding on the pod network,
 * LiveMigratable=False, InterfaceNotLiveMigratable) with no strategy of its own, under
 * the KubeVirt CR's default evictionStrategy LiveMigrate.
 *
 * `kubectl drain B --ignore-daemonsets --delete-emptydir-data`: virt-api's eviction
 * webhook turns the VM's eviction into an evacuation (an evacuation migration moves it
 * back to A, the same guest: no boot marker on either later console, its uptime older
 * than its first boot) and keeps refusing the other VMI's with upstream's reason, which
 * drain prints as it retries. The CR's default then becomes None: the next retry evicts
 * that VMI's pod, the VMI stops (upstream's behaviour), and the drain completes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../src/api/generated/types';
import { kubectlBin } from '../support/cluster-pods';
import { waitFor } from '../support/wait';
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
}

const STUCK = 'vmi-nomigrate';
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
  const setDefaultStrategy = (s: string) =>
    kubectl(
      'patch',
      'kubevirt',
      'kubevirt',
      '-n',
      'kubevirt',
      '--type',
      'merge',
      '-p',
      JSON.stringify({ spec: { configuration: { evictionStrategy: s } } }),
    );
  const before = await vmis(c.vm);
  const uid = before?.metadata?.uid ?? '';
  expect(before?.status?.nodeName).toBe(c.nodeB);

  setDefaultStrategy('LiveMigrate');
  writeFileSync(join(c.dir, 'stuck.yaml'), JSON.stringify(stuckVmi(ns, c.nodeB)));
  kubectl('create', '-f', join(c.dir, 'stuck.yaml'));
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
  /** What the cluster looked like, when a wait fails. */
  const diagnose = () => {
    for (const args of [
      ['get', 'vmi,vmim', '-n', ns, '-o', 'wide'],
      ['get', 'pods', '-n', ns, '-o', 'wide'],
      ['get', 'vmi', c.vm, '-n', ns, '-o', 'jsonpath={.status.evacuationNodeName} {.status.conditions}'],
    ]) {
      try {
        process.stderr.write(`[drain] kubectl ${args.join(' ')}:\n${kubectl(...args)}\n`);
      } catch (e) {
        process.stderr.write(`[drain] ${(e as Error).message}\n`);
      }
    }
    process.stderr.write(`[drain] kubectl drain so far:\n${tail(drain.out())}\n`);
  };
  try {
    // The VM moves back to node A through an evacuation migration.
    const evacuation = await waitFor(
      'the evacuation migration Succeeded',
      async () => {
        const list = (await c.custom.listNamespacedCustomObject({
          group: 'kubevirt.io',
          version: 'v1',
          namespace: ns,
          plural: 'virtualmachineinstancemigrations',
        })) as { items: VirtualMachineInstanceMigration[] };
        const m = list.items.find(
          (x) => x.spec.vmiName === c.vm && x.metadata?.name?.startsWith('kubevirt-evacuation-'),
        );
        if (m?.status?.phase === 'Failed') throw new Error(`evacuation Failed: ${JSON.stringify(m.status)}`);
        return m?.status?.phase === 'Succeeded' ? m : undefined;
      },
      240_000,
      1_000,
    );
    expect(evacuation.metadata?.annotations?.['kubevirt.io/evacuationMigration']).toBe(c.nodeB);
    process.stderr.write(
      `[drain] ${c.vm} evacuated to node A ${Math.round(performance.now() - t0)} ms after the drain began\n`,
    );
    // The other VMI's eviction is refused with the reason, again and again, and it still runs.
    await waitFor(
      'drain printing the refusal twice',
      () => (drain.out().split(REFUSAL).length > 2 ? true : undefined),
      60_000,
      500,
    );
    expect((await vmis(STUCK))?.status?.phase).toBe('Running');
    expect(drain.code()).toBeUndefined();

    // The cluster's default becomes None: that VMI's pod is evicted, the VMI stops.
    setDefaultStrategy('None');
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
  }
  const gone = await waitFor(
    `${STUCK} stopped`,
    async () => {
      const v = await vmis(STUCK);
      return v?.status?.phase === 'Failed' || v?.status?.phase === 'Succeeded' ? v : undefined;
    },
    60_000,
    500,
  );
  process.stderr.write(`[drain] ${STUCK} ended ${gone.status?.phase}\n`);

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

/** The tiny guest as a VMI on node B with the bridge binding (not live-migratable). */
function stuckVmi(ns: string, node: string) {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: STUCK, namespace: ns },
    spec: {
      terminationGracePeriodSeconds: 0,
      nodeSelector: { 'kubernetes.io/hostname': node },
      domain: {
        devices: {
          autoattachGraphicsDevice: false,
          disks: [{ name: 'boot', disk: { bus: 'virtio' } }],
          interfaces: [{ name: 'default', bridge: {} }],
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
    },
  };
}

/** kubectl in the background: its output so far, its exit code once it ended. */
function run(args: string[]) {
  const child: ChildProcess = spawn(kubectlBin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let code: number | undefined;
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  child.once('exit', (c) => {
    code = c ?? -1;
  });
  return {
    out: () => out,
    code: () => code,
    kill: () => {
      if (code === undefined) child.kill();
    },
  };
}

const tail = (s: string) => s.split('\n').slice(-15).join('\n');
