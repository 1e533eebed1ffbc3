/**
 * The migration controller and two virt-handlers agree on the contract: virt-controller
 * (VMI, migration) on the embedded store, two handlers, and a stand-in kubelet that binds
 * pods (migration targets to node2, the rest to node1), runs each pod's launcher in
 * process on that node's fake host and reports the pod Running, then Succeeded when the
 * launcher exits. A VirtualMachineInstanceMigration goes through every phase to
 * Succeeded; deleting one while the guest moves cancels it (abortRequested, the source
 * aborts, the migration Failed and released) with the guest still on node1.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../src/api/generated/types';
import type { Pod } from '../../../src/controllers/common/pod';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { NotFoundError } from '../../../src/controllers/runtime/errors';
import { PodType, VirtualMachineInstanceMigrationType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { VirtController } from '../../../src/controllers/virt-controller/virt-controller';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { FakeDriver, type FakeDriverOptions, registerFakeHost } from '../../../src/drivers';
import { waitFor } from '../../support/wait';
import { type FakeNode, podLauncher, startFakeNode } from './fake-node';

const NS = 'default';

interface Node extends FakeNode {
  migration: FakeDriverOptions['migration'];
}

describe('migration controller and virt-handlers (embedded store, fake hosts)', () => {
  let store: EmbeddedStore;
  let controller: VirtController;
  let kubelet: NodeJS.Timeout | undefined;
  const nodes: Node[] = [];
  const launchers = new Map<string, VirtLauncher>();
  const cleanups: Array<() => void> = [];

  afterEach(async () => {
    if (kubelet) clearInterval(kubelet);
    await controller.stop();
    for (const n of nodes) await n.handler.stop();
    for (const l of launchers.values()) await l.exit(0);
    for (const c of cleanups) c();
    for (const n of nodes) rmSync(n.root, { recursive: true, force: true });
    nodes.length = 0;
    launchers.clear();
    cleanups.length = 0;
  });

  async function node(name: string, migration: FakeDriverOptions['migration'] = {}): Promise<Node> {
    const n = {
      ...(await startFakeNode(store, name, {
        rootPrefix: 'kvts-hmigc-',
        migrationAddress: `fake://${name}`,
      })),
      migration,
    };
    cleanups.push(registerFakeHost(`fake://${name}`, n.host));
    nodes.push(n);
    return n;
  }

  /** One pass of the stand-in kubelet. */
  async function kubeletPass(): Promise<void> {
    const pods = (await store.list<Pod & KubeObject>(PodType, { namespace: NS })).items;
    for (const p of pods) {
      const uid = p.metadata?.uid ?? '';
      if (p.metadata?.deletionTimestamp) continue;
      if (!p.spec?.nodeName) {
        const to = p.metadata?.labels?.['kubevirt.io/migrationJobUID'] ? 'node2' : 'node1';
        await store.update(PodType, { ...p, spec: { ...p.spec, nodeName: to } } as KubeObject);
        continue;
      }
      if (launchers.has(uid) || p.status?.phase === 'Succeeded') continue;
      const n = nodes.find((x) => x.name === p.spec?.nodeName);
      if (!n) continue;
      const owner = p.metadata?.ownerReferences?.find((r) => r.kind === 'VirtualMachineInstance');
      const { launcher } = podLauncher(
        n,
        uid,
        { namespace: NS, name: owner?.name ?? '', uid: owner?.uid ?? '' },
        () => new FakeDriver({ host: n.host, migration: n.migration }),
      );
      launchers.set(uid, launcher);
      await launcher.start();
      const running = (c: { name: string }) => ({ name: c.name, ready: true, state: { running: {} } });
      await store.updateStatus(PodType, {
        ...p,
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: (p.spec?.containers ?? []).map(running),
        },
      } as KubeObject);
      void launcher.exited.then(async () => {
        const now = await store
          .get<Pod & KubeObject>(PodType, p.metadata?.name ?? '', NS)
          .catch(() => undefined);
        if (now)
          await store.updateStatus(PodType, {
            ...now,
            status: { ...now.status, phase: 'Succeeded' },
          } as KubeObject);
      });
    }
  }

  async function start(sourceMigration: FakeDriverOptions['migration'] = {}) {
    store = await EmbeddedStore.open();
    controller = new VirtController({
      client: store,
      config: createClusterConfig(
        { developerConfiguration: { useEmulation: true } },
        { hostArchitecture: 'amd64' },
      ),
      launcher: { launcherImage: 'kubevirt-ts/virt-launcher:dev', hypervisor: 'emulation' },
      onError: () => {},
    });
    await controller.start();
    const n1 = await node('node1', sourceMigration);
    const n2 = await node('node2');
    let busy = false;
    kubelet = setInterval(() => {
      if (busy) return;
      busy = true;
      kubeletPass()
        .catch(() => undefined)
        .finally(() => {
          busy = false;
        });
    }, 30);
    await store.create(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'vm1', namespace: NS },
      spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
    } as KubeObject);
    await waitFor('VMI Running on node1', async () => {
      const v = await getVmi();
      return v.status?.phase === 'Running' && v.status.nodeName === 'node1';
    });
    await store.create(VirtualMachineInstanceMigrationType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstanceMigration',
      metadata: { name: 'mig', namespace: NS },
      spec: { vmiName: 'vm1' },
    } as KubeObject);
    return { n1, n2 };
  }

  const getVmi = () => store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'vm1', NS);
  const getMig = () =>
    store.get<VirtualMachineInstanceMigration & KubeObject>(VirtualMachineInstanceMigrationType, 'mig', NS);

  it('a migration goes through every phase to Succeeded and the VMI runs on node2', async () => {
    const { n1, n2 } = await start();
    const m = await waitFor('migration final', async () => {
      const x = await getMig();
      return x.status?.phase === 'Succeeded' || x.status?.phase === 'Failed' ? x : undefined;
    });
    expect(m.status?.phaseTransitionTimestamps?.map((t) => t.phase)).toEqual([
      'Pending',
      'Scheduling',
      'Scheduled',
      'PreparingTarget',
      'TargetReady',
      'Running',
      'Succeeded',
    ]);
    const vmi = await getVmi();
    expect(vmi.status?.nodeName).toBe('node2');
    expect(vmi.status?.phase).toBe('Running');
    expect(vmi.status?.migrationState).toMatchObject({
      migrationUid: m.metadata?.uid,
      sourceNode: 'node1',
      targetNode: 'node2',
      targetNodeAddress: 'fake://node2',
      targetNodeDomainDetected: true,
      completed: true,
    });
    expect(n1.host.domains.has('default_vm1')).toBe(false);
    expect(n2.host.domains.get('default_vm1')?.boots).toBe(1);
    // The source pod finished; the VMI stays Running on the target pod.
    await waitFor('source pod Succeeded', async () => {
      const pods = (await store.list<Pod & KubeObject>(PodType, { namespace: NS })).items;
      return pods.find((p) => p.spec?.nodeName === 'node1')?.status?.phase === 'Succeeded';
    });
    // A settle pause, not a timing assertion: a VMI controller that took the finished source pod for the VMI's would fail it now.
    await new Promise((r) => setTimeout(r, 300));
    expect((await getVmi()).status?.phase).toBe('Running');
    // The finalizer is gone with the final phase.
    expect((await getMig()).metadata?.finalizers ?? []).not.toContain('kubevirt.io/migrationJobFinalize');
  });

  it('deleting the migration while the guest moves cancels it; the guest stays on node1', async () => {
    const { n1, n2 } = await start({ durationMs: 60_000 });
    await waitFor('migration Running', async () => (await getMig()).status?.phase === 'Running');
    await store.delete(VirtualMachineInstanceMigrationType, 'mig', { namespace: NS });
    await waitFor('migration released', async () => {
      try {
        await getMig();
        return false;
      } catch (e) {
        return e instanceof NotFoundError;
      }
    });
    const vmi = await getVmi();
    expect(vmi.status?.migrationState).toMatchObject({
      abortRequested: true,
      abortStatus: 'Succeeded',
      completed: true,
      failed: true,
      failureReason: 'Live migration aborted',
    });
    expect(vmi.status?.nodeName).toBe('node1');
    expect(vmi.status?.phase).toBe('Running');
    expect(n1.host.domains.get('default_vm1')?.info.state).toBe('running');
    expect(n2.host.domains.has('default_vm1')).toBe(false);
  });
});
