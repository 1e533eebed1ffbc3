/**
 * NIC hotplug and unplug on the two-node cluster (issue 28 item 3), run by
 * migration.serial.test.ts after its drain case, on that cluster and guest (the tiny VM,
 * masquerade on the pod network, booted once). LiveUpdate is the default rollout strategy.
 *
 * Plug: a bridge interface `blue` on the Multus network `nic-net` (a bridge plugin
 * definition without IPAM: layer 2) is added to the running VM's template. The VM
 * controller appends it to the VMI; the launcher pod was created without it and this
 * cluster's Multus cannot add an interface to a running pod, so the VMI gets
 * MigrationRequired (AutoMigrationDueToLiveUpdate) and the workload updater migrates it to a
 * launcher pod whose networks annotation has the network; there the handler's phase 1
 * binds it and the launcher attaches the NIC (libvirt attach-device). Asserted: the
 * migration Succeeded, the guest's /sys/class/net has a second interface whose MAC is the
 * one `status.interfaces` gives `blue`, no boot on the new launcher, never RestartRequired.
 *
 * Unplug: `state: absent` on it. The launcher detaches the NIC (the guest loses it), the
 * interface leaves the VMI's spec and status, and a second workload-update migration moves
 * the VMI to a pod without the network. Prints `BENCH hotplug nic_hotplug_ms=<n>
 * nic_unplug_ms=<n>`: each edit to the guest showing it. Deletes its migrations at the
 * end (the CPU case counts its own).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { waitFor } from '../support/wait';
import { kubevirtReads } from './kubevirt-reads';
import { consoleAnswers } from './operator-cluster';

/** What the NIC hotplug case needs from the migration test. */
export interface NicHotplugContext {
  info: ClusterInfo;
  dir: string;
  kubectl: (...args: string[]) => string;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  ns: string;
  /** The VM (its VMI has the same name), Running, booted once. */
  vm: string;
  markers: (pod: V1Pod, vmiUid: string) => number;
}

const NETWORKS = 'k8s.v1.cni.cncf.io/networks';
/** The secondary network's bridge (removed from the host by the migration test's cleanup). */
export const NIC_BRIDGE = 'kvts-nhp0';
/** upstream's hashed pod interface name of network `blue`. */
const POD_IFACE = 'pod16477688c0e';

/** The NIC hotplug and unplug described above, with their assertions. */
export async function nicHotplugCase(c: NicHotplugContext): Promise<void> {
  const { kubectl, ns } = c;
  const { vmi, vm, workloadUpdates, finishedUpdates } = kubevirtReads(c.custom, ns, c.vm);
  const launcher = async (name: string | undefined) => {
    const uid = (await vmi())?.metadata?.uid ?? '';
    const pods = (
      await c.core.listNamespacedPod({ namespace: ns, labelSelector: `kubevirt.io/created-by=${uid}` })
    ).items;
    const pod = pods.find((p) => p.metadata?.name === name);
    if (!pod) throw new Error(`no launcher pod ${name}`);
    return pod;
  };
  const nicsInGuest = (tag: string) =>
    consoleAnswers(c.info, c.vm, { expr: '$(ls /sys/class/net | grep -c ^eth)', tag });
  const restartRequired = async () =>
    (await vm())?.status?.conditions?.find((x) => x.type === 'RestartRequired');
  const patchVm = (ops: object[]) =>
    kubectl('patch', 'vm', c.vm, '-n', ns, '--type', 'json', '-p', JSON.stringify(ops));

  // The drain case's bandwidth policy would slow these migrations down: not this case's subject.
  kubectl('delete', 'migrationpolicy', 'drain-slow', '--ignore-not-found');
  // A layer-2 network (no IPAM): the bridge plugin makes the bridge in each node's namespace.
  const nad = {
    apiVersion: 'k8s.cni.cncf.io/v1',
    kind: 'NetworkAttachmentDefinition',
    metadata: { name: 'nic-net', namespace: ns },
    spec: {
      config: JSON.stringify({ cniVersion: '0.3.1', name: 'nic-net', type: 'bridge', bridge: NIC_BRIDGE }),
    },
  };
  writeFileSync(join(c.dir, 'nic-net.json'), JSON.stringify(nad));
  kubectl('apply', '-f', join(c.dir, 'nic-net.json'));
  const before = await vmi();
  const uid = before?.metadata?.uid ?? '';
  expect(before?.spec.domain.devices.interfaces?.map((i) => i.name)).toEqual(['default']);
  expect(await workloadUpdates()).toEqual([]);
  expect(await nicsInGuest('N0')).toBe(1);

  // Plug.
  const t0 = performance.now();
  patchVm([
    {
      op: 'add',
      path: '/spec/template/spec/domain/devices/interfaces/-',
      value: { name: 'blue', bridge: {} },
    },
    {
      op: 'add',
      path: '/spec/template/spec/networks/-',
      value: { name: 'blue', multus: { networkName: 'nic-net' } },
    },
  ]);
  const required = await waitFor(
    'MigrationRequired on the VMI, or its migration',
    async () => {
      const v = await vmi();
      const cond = v?.status?.conditions?.find((x) => x.type === 'MigrationRequired');
      if (cond) return cond;
      return (await workloadUpdates()).length > 0 ? { reason: 'seen through its migration' } : undefined;
    },
    60_000,
    100,
  );
  process.stderr.write(`[nic-hotplug] ${JSON.stringify(required)}\n`);
  const plugged = await waitFor(
    'blue in status.interfaces',
    async () => {
      const v = await vmi();
      const blue = v?.status?.interfaces?.find((i) => i.name === 'blue');
      return v && blue?.mac ? { v, blue } : undefined;
    },
    300_000,
    250,
  );
  const shown = await waitFor(
    'the second NIC in the guest',
    async () => ((await nicsInGuest('N1')) === 2 ? performance.now() : undefined),
    60_000,
    200,
  );
  const nicHotplugMs = Math.round(shown - t0);
  const mac = plugged.blue.mac ?? '';
  expect(plugged.blue.podInterfaceName).toBe(POD_IFACE);
  // The guest's new NIC has the MAC status gives it.
  expect(
    await consoleAnswers(c.info, c.vm, {
      expr: `$(cat /sys/class/net/eth*/address | grep -c ${mac})`,
      tag: 'MAC',
    }),
  ).toBe(1);
  const [m] = await finishedUpdates(1);
  expect(m?.status?.phase).toBe('Succeeded');
  expect(await workloadUpdates()).toHaveLength(1);
  expect(plugged.v.metadata?.uid).toBe(uid);
  expect(plugged.v.status?.nodeName).toBe(m?.status?.migrationState?.targetNode);
  expect(plugged.v.status?.conditions?.some((x) => x.type === 'MigrationRequired')).toBe(false);
  const target = await launcher(m?.status?.migrationState?.targetPod);
  expect(JSON.parse(target.metadata?.annotations?.[NETWORKS] ?? '[]')).toEqual([
    { name: 'nic-net', namespace: ns, interface: POD_IFACE },
  ]);
  // The same guest: no boot on the new pod's console.
  expect(c.markers(target, uid)).toBe(0);
  expect(await restartRequired()).toBeUndefined();

  // Unplug.
  const t1 = performance.now();
  const index = (await vm())?.spec.template?.spec?.domain.devices.interfaces?.findIndex(
    (i) => i.name === 'blue',
  );
  patchVm([
    { op: 'add', path: `/spec/template/spec/domain/devices/interfaces/${index}/state`, value: 'absent' },
  ]);
  await waitFor(
    'the NIC gone from the guest',
    async () => ((await nicsInGuest('N2')) === 1 ? true : undefined),
    120_000,
    200,
  );
  const nicUnplugMs = Math.round(performance.now() - t1);
  const moved = await waitFor(
    'a second workload-update migration Succeeded, the VMI without blue',
    async () => {
      const ms = await workloadUpdates();
      const v = await vmi();
      const done = ms.length === 2 && ms.every((x) => x.status?.phase === 'Succeeded');
      const gone = !v?.spec.domain.devices.interfaces?.some((i) => i.name === 'blue');
      const req = v?.status?.conditions?.some((x) => x.type === 'MigrationRequired');
      return done && gone && !req ? { ms, v } : undefined;
    },
    300_000,
    250,
  );
  const second = (await finishedUpdates(2)).find((x) => x.metadata?.name !== m?.metadata?.name);
  expect(moved.v?.status?.nodeName).toBe(second?.status?.migrationState?.targetNode);
  expect(moved.v?.status?.interfaces?.some((i) => i.name === 'blue')).toBe(false);
  expect(moved.v?.spec.networks?.map((n) => n.name)).toEqual(['default']);
  const last = await launcher(second?.status?.migrationState?.targetPod);
  expect(last.metadata?.annotations?.[NETWORKS]).toBeUndefined();
  expect(c.markers(last, uid)).toBe(0);
  expect(await nicsInGuest('N3')).toBe(1);
  expect(await restartRequired()).toBeUndefined();
  process.stdout.write(`BENCH hotplug nic_hotplug_ms=${nicHotplugMs} nic_unplug_ms=${nicUnplugMs}\n`);
  process.stderr.write(
    `[nic-hotplug] plugged ${mac} through ${m?.metadata?.name} in ${nicHotplugMs} ms; unplugged in ${nicUnplugMs} ms, pod dropped through ${second?.metadata?.name}\n`,
  );
  // The CPU case counts its own migrations.
  for (const x of moved.ms) kubectl('delete', 'vmim', '-n', ns, x.metadata?.name ?? '');
}
