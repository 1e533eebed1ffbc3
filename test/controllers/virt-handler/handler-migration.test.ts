/**
 * virt-handler's migration roles with two handlers (node1, node2) on the embedded store,
 * each driving real in-process launchers over their unix sockets, the launchers running
 * fake drivers on two fake hosts. The test plays the migration controller's hand-off
 * (migrationState, the target node label, the target pod) and the kubelet (pods
 * Running); the handlers do the rest: prepare the target, advertise it, start the
 * migration with the cluster's options, follow the report, hand the VMI over, fail and
 * clean up, cancel on abortRequested.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { MigrationConfiguration, VirtualMachineInstance } from '../../../src/api/generated/types';
import type { Pod } from '../../../src/controllers/common/pod';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { MIGRATION_TARGET_XML } from '../../../src/controllers/launcher-protocol/paths';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { TARGET_DOMAIN_ANNOTATION } from '../../../src/controllers/virt-handler/migration-target-domain';
import { onGuest } from '../../../src/controllers/virt-handler/vmi-operations';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import {
  FakeDriver,
  type FakeDriverOptions,
  type MigrationOptions,
  type MigrationSupport,
  registerFakeHost,
} from '../../../src/drivers';
import { waitFor } from '../../support/wait';
import { type FakeNode, podLauncher, startFakeNode } from './fake-node';

const NS = 'default';
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

interface MigrateCall {
  targetUri: string;
  cookie: string;
  options?: MigrationOptions;
}

describe('virt-handler live migration (two nodes, fake hosts)', () => {
  let store: EmbeddedStore;
  const nodes: FakeNode[] = [];
  const launchers: VirtLauncher[] = [];
  const cleanups: Array<() => void> = [];
  const calls: MigrateCall[] = [];

  afterEach(async () => {
    for (const n of nodes) await n.handler.stop();
    for (const l of launchers) await l.exit(0);
    for (const c of cleanups) c();
    for (const n of nodes) rmSync(n.root, { recursive: true, force: true });
    nodes.length = 0;
    launchers.length = 0;
    cleanups.length = 0;
    calls.length = 0;
  });

  async function node(
    name: string,
    o: { migrationAddress?: string; migrationConfig?: () => MigrationConfiguration } = {},
  ): Promise<FakeNode> {
    const n = await startFakeNode(store, name, { rootPrefix: 'kvts-hmig-', ...o });
    nodes.push(n);
    return n;
  }

  /** A launcher pod on `n` (Running, as the kubelet would report it) and its launcher. */
  async function launcherPod(
    n: FakeNode,
    vmi: VirtualMachineInstance,
    podName: string,
    extraLabels: Record<string, string> = {},
    migration: FakeDriverOptions['migration'] = {},
  ): Promise<{ pod: Pod; launcher: VirtLauncher; dir: string }> {
    const created = await store.create<Pod & KubeObject>(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: podName,
        namespace: NS,
        labels: {
          'kubevirt.io': 'virt-launcher',
          'kubevirt.io/created-by': vmi.metadata?.uid ?? '',
          ...extraLabels,
        },
        ownerReferences: [
          {
            apiVersion: 'kubevirt.io/v1',
            kind: 'VirtualMachineInstance',
            name: vmi.metadata?.name ?? '',
            uid: vmi.metadata?.uid ?? '',
            controller: true,
          },
        ],
      },
      spec: { nodeName: n.name, containers: [{ name: 'compute', image: 'x' }] },
    } as Pod & KubeObject);
    const pod = await store.updateStatus<Pod & KubeObject>(PodType, {
      ...created,
      status: {
        phase: 'Running',
        containerStatuses: [{ name: 'compute', ready: true, state: { running: {} } }],
      },
    } as Pod & KubeObject);
    const driver = new FakeDriver({ host: n.host, migration });
    const orig = driver.migration;
    // Record what the source's driver is asked to do.
    (driver as { migration: MigrationSupport }).migration = {
      ...orig,
      migrateSource: (ref, targetUri, cookie, options) => {
        calls.push({ targetUri, cookie, options });
        return orig.migrateSource(ref, targetUri, cookie, options);
      },
    };
    const { launcher, dir } = podLauncher(
      n,
      pod.metadata?.uid ?? '',
      { namespace: NS, name: vmi.metadata?.name ?? '', uid: vmi.metadata?.uid ?? '' },
      () => driver,
      podName,
    );
    await launcher.start();
    launchers.push(launcher);
    return { pod, launcher, dir };
  }

  const getVmi = () => store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'vm1', NS);

  /** A VMI scheduled to node1 (as the VMI controller leaves it); node1's handler boots it. */
  async function runningVmi(n1: FakeNode, migration: FakeDriverOptions['migration'] = {}) {
    const created = await store.create<VirtualMachineInstance & KubeObject>(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'vm1', namespace: NS, labels: { 'kubevirt.io/nodeName': n1.name } },
      spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
      status: { phase: 'Scheduled', nodeName: n1.name },
    } as VirtualMachineInstance & KubeObject);
    const source = await launcherPod(n1, created, 'virt-launcher-vm1-src', {}, migration);
    const vmi = await waitFor('VMI Running on node1', async () => {
      const v = await getVmi();
      return v.status?.phase === 'Running' ? v : undefined;
    });
    return { vmi, source };
  }

  /** The migration controller's hand-off: target pod on node2 and migrationState on the VMI. */
  async function handOff(n2: FakeNode, migrationUid: string, podName = 'virt-launcher-vm1-tgt') {
    const vmi = await getVmi();
    const target = await launcherPod(n2, vmi, podName, {
      'kubevirt.io/migrationJobUID': migrationUid,
    });
    const v = await getVmi();
    await store.update(VmiResource, {
      ...v,
      metadata: {
        ...v.metadata,
        labels: { ...v.metadata?.labels, 'kubevirt.io/migrationTargetNodeName': n2.name },
      },
      status: {
        ...v.status,
        migrationState: {
          migrationUid,
          sourceNode: vmi.status?.nodeName,
          targetNode: n2.name,
          targetPod: podName,
          mode: 'PreCopy',
        },
      },
    } as KubeObject);
    return target;
  }

  it('moves the running guest to node2: target prepared and advertised, migration with the cluster options, VMI handed over, source launcher gone', async () => {
    store = await EmbeddedStore.open();
    const n1 = await node('node1', {
      migrationConfig: () => ({
        bandwidthPerMigration: '64Mi',
        completionTimeoutPerGiB: 800,
        progressTimeout: 150,
        allowAutoConverge: true,
        allowPostCopy: false,
      }),
    });
    const n2 = await node('node2', { migrationAddress: 'fake://node2' });
    cleanups.push(registerFakeHost('fake://node2', n2.host));
    const { source } = await runningVmi(n1);
    const bootsBefore = n1.host.domains.get('default_vm1')?.boots;
    expect(bootsBefore).toBe(1);

    const target = await handOff(n2, 'mig-1');
    const moved = await waitFor('VMI on node2', async () => {
      const v = await getVmi();
      return v.status?.nodeName === 'node2' ? v : undefined;
    });

    const ms = moved.status?.migrationState ?? {};
    expect(ms).toMatchObject({
      migrationUid: 'mig-1',
      sourceNode: 'node1',
      targetNode: 'node2',
      targetPod: 'virt-launcher-vm1-tgt',
      targetNodeAddress: 'fake://node2',
      targetNodeDomainDetected: true,
      completed: true,
      mode: 'PreCopy',
    });
    expect(ms.failed).toBeUndefined();
    expect(ms.abortStatus).toBeUndefined();
    for (const t of [ms.startTimestamp, ms.endTimestamp, ms.targetNodeDomainReadyTimestamp])
      expect(t).toMatch(RFC3339);
    expect(moved.metadata?.labels?.['kubevirt.io/nodeName']).toBe('node2');
    expect(moved.metadata?.labels?.['kubevirt.io/migrationTargetNodeName']).toBeUndefined();
    expect(moved.status?.phase).toBe('Running');

    // The guest moved without a reboot.
    expect(n1.host.domains.has('default_vm1')).toBe(false);
    expect(n2.host.domains.get('default_vm1')?.boots).toBe(1);
    expect(n2.host.domains.get('default_vm1')?.info.state).toBe('running');

    // The source got the target's XML (published on the target pod) and the cluster options.
    const xml = readFileSync(join(target.dir, MIGRATION_TARGET_XML), 'utf8');
    const targetPod = await store.get<Pod & KubeObject>(PodType, 'virt-launcher-vm1-tgt', NS);
    expect(targetPod.metadata?.annotations?.[TARGET_DOMAIN_ANNOTATION]).toBe(xml);
    expect(calls).toEqual([
      {
        targetUri: 'fake://node2',
        cookie: xml,
        options: {
          bandwidthMiBps: 64,
          allowAutoConverge: true,
          allowPostCopy: false,
          unsafe: false,
          migrateUri: 'tcp://node2',
        },
      },
    ]);

    // The source launcher was told to go; the target launcher is now the VMI's.
    await expect(source.launcher.exited).resolves.toBe(0);
    const d = target.launcher.domain();
    expect(d?.state).toBe('running');
    expect(d?.migration).toMatchObject({ uid: 'mig-1', role: 'target', completed: true });

    // node2's handler now runs the VMI as its own: a pause goes through the target launcher.
    await onGuest(n2.handler, NS, 'vm1', 'pause');
    await waitFor('Paused condition from node2', async () =>
      (await getVmi()).status?.conditions?.some((c) => c.type === 'Paused' && c.status === 'True'),
    );
    expect(n2.host.domains.get('default_vm1')?.info.state).toBe('paused');
    expect((await getVmi()).status?.phase).toBe('Running');
  });

  it('migrates back: the pod that came with the first migration is the source of the second', async () => {
    store = await EmbeddedStore.open();
    const n1 = await node('node1', { migrationAddress: 'fake://node1' });
    const n2 = await node('node2', { migrationAddress: 'fake://node2' });
    cleanups.push(registerFakeHost('fake://node1', n1.host), registerFakeHost('fake://node2', n2.host));
    await runningVmi(n1);
    await handOff(n2, 'mig-a');
    await waitFor('VMI on node2', async () => (await getVmi()).status?.nodeName === 'node2');

    const back = await handOff(n1, 'mig-b', 'virt-launcher-vm1-back');
    const home = await waitFor('VMI back on node1', async () => {
      const v = await getVmi();
      return v.status?.nodeName === 'node1' ? v : undefined;
    });
    expect(home.status?.migrationState).toMatchObject({
      migrationUid: 'mig-b',
      sourceNode: 'node2',
      targetNode: 'node1',
      targetPod: 'virt-launcher-vm1-back',
      completed: true,
    });
    expect(home.metadata?.labels?.['kubevirt.io/nodeName']).toBe('node1');
    expect(calls.map((c) => c.targetUri)).toEqual(['fake://node2', 'fake://node1']);
    expect(n1.host.domains.get('default_vm1')?.info.state).toBe('running');
    expect(n1.host.domains.get('default_vm1')?.boots).toBe(1);
    expect(n2.host.domains.has('default_vm1')).toBe(false);
    expect(back.launcher.domain()?.migration).toMatchObject({
      uid: 'mig-b',
      role: 'target',
      completed: true,
    });
    expect(home.status?.phase).toBe('Running');
  });

  it('a migration that fails leaves the guest running on node1, reports why, and the target launcher goes', async () => {
    store = await EmbeddedStore.open();
    const n1 = await node('node1');
    // node2 advertises an address nobody serves.
    const n2 = await node('node2', { migrationAddress: 'fake://nowhere' });
    await runningVmi(n1);
    const target = await handOff(n2, 'mig-2');

    const failed = await waitFor('migration failed', async () => {
      const v = await getVmi();
      return v.status?.migrationState?.failed ? v : undefined;
    });
    const ms = failed.status?.migrationState ?? {};
    expect(ms).toMatchObject({
      migrationUid: 'mig-2',
      targetNodeAddress: 'fake://nowhere',
      completed: true,
      failed: true,
      failureReason:
        'Live migration failed: domain default_vm1: migrate to fake://nowhere failed: unable to connect to fake://nowhere: no fake host there',
    });
    expect(ms.targetNodeDomainDetected).toBeUndefined();
    expect(ms.startTimestamp).toMatch(RFC3339);
    expect(ms.endTimestamp).toMatch(RFC3339);
    expect(failed.status?.nodeName).toBe('node1');
    expect(failed.status?.phase).toBe('Running');
    expect(n1.host.domains.get('default_vm1')?.info.state).toBe('running');
    await expect(target.launcher.exited).resolves.toBe(0);
  });

  it('abortRequested cancels the running migration: abortStatus Succeeded, the guest stays on node1', async () => {
    store = await EmbeddedStore.open();
    const n1 = await node('node1');
    const n2 = await node('node2', { migrationAddress: 'fake://node2' });
    cleanups.push(registerFakeHost('fake://node2', n2.host));
    // The job takes a minute: time to cancel it.
    await runningVmi(n1, { durationMs: 60_000 });
    await handOff(n2, 'mig-3');
    await waitFor('migration started', async () => (await getVmi()).status?.migrationState?.startTimestamp);

    // What the migration controller writes when the migration object is deleted.
    const v = await getVmi();
    await store.update(VmiResource, {
      ...v,
      status: { ...v.status, migrationState: { ...v.status?.migrationState, abortRequested: true } },
    } as KubeObject);

    const ended = await waitFor('migration aborted', async () => {
      const x = await getVmi();
      return x.status?.migrationState?.endTimestamp ? x : undefined;
    });
    expect(ended.status?.migrationState).toMatchObject({
      migrationUid: 'mig-3',
      abortRequested: true,
      abortStatus: 'Succeeded',
      completed: true,
      failed: true,
      failureReason: 'Live migration aborted',
    });
    expect(ended.status?.nodeName).toBe('node1');
    expect(ended.status?.phase).toBe('Running');
    expect(n1.host.domains.get('default_vm1')?.info.state).toBe('running');
    expect(n2.host.domains.has('default_vm1')).toBe(false);
  });

  it('sends the source launcher no sync while its migration is in flight (a NIC asked for meanwhile waits)', async () => {
    store = await EmbeddedStore.open();
    const n1 = await node('node1');
    const n2 = await node('node2', { migrationAddress: 'fake://node2' });
    cleanups.push(registerFakeHost('fake://node2', n2.host));
    const { source } = await runningVmi(n1, { durationMs: 60_000 });
    await handOff(n2, 'mig-9');
    await waitFor('migration started', async () => (await getVmi()).status?.migrationState?.startTimestamp);
    const syncs: number[] = [];
    const sync = source.launcher.syncVirtualMachine.bind(source.launcher);
    source.launcher.syncVirtualMachine = (r) => {
      syncs.push(Date.now());
      return sync(r);
    };
    // A secondary NIC (the VM controller's live update): the handler of a guest that is not
    // migrating has its launcher plug it at once (a sync).
    const v = await getVmi();
    await store.update(VmiResource, {
      ...v,
      spec: {
        ...v.spec,
        domain: { ...v.spec.domain, devices: { interfaces: [{ name: 'blue', bridge: {} }] } },
        networks: [{ name: 'blue', multus: { networkName: 'nic-net' } }],
      },
    } as KubeObject);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(syncs).toEqual([]);
    expect((await getVmi()).status?.migrationState?.completed).toBeUndefined();
    expect(n1.host.domains.get('default_vm1')?.info.state).toBe('running');
  });

  it('a target node without a migration address fails the migration, saying so', async () => {
    store = await EmbeddedStore.open();
    const n1 = await node('node1');
    const n2 = await node('node2');
    await runningVmi(n1);
    await handOff(n2, 'mig-4');
    const failed = await waitFor('migration failed', async () => {
      const v = await getVmi();
      return v.status?.migrationState?.failed ? v : undefined;
    });
    expect(failed.status?.migrationState?.failureReason).toBe(
      'virt-handler on node node2 has no migration address to offer the source (VirtHandlerOptions.migrationAddress)',
    );
    expect(failed.status?.migrationState?.startTimestamp).toBeUndefined();
    expect(calls).toEqual([]);
    expect(failed.status?.phase).toBe('Running');
  });
});
