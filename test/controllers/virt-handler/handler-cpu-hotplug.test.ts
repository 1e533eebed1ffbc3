/**
 * CPU hotplug's node side (upstream's migration target hotplugCPU) with two handlers on the
 * embedded store and real in-process launchers on fake hosts: a VMI whose spec asks for 2
 * sockets while its guest has 1 (status.currentCPUTopology, the HotVCPUChange condition)
 * migrates from node1 to node2; node2's launcher takes the guest in with its 1 vCPU (the
 * target domain is rendered at the current topology, or the migration could not match),
 * then node2's handler has it enable the second one (SyncVirtualMachineCPUs) and records
 * currentCPUTopology without the condition. A condition older than the last migration's
 * start is not applied by that migration's node (it was not made for it).
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { migratedForHotplug } from '../../../src/controllers/common/hotplug-migration';
import type { Pod } from '../../../src/controllers/common/pod';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { withCurrentCpus } from '../../../src/controllers/virt-launcher/migration-rpcs';
import { FakeDriver, registerFakeHost } from '../../../src/drivers';
import { waitFor } from '../../support/wait';
import { type FakeNode, podLauncher, startFakeNode } from './fake-node';

const NS = 'default';

describe('virt-handler CPU hotplug after a migration (two nodes, fake hosts)', () => {
  let store: EmbeddedStore;
  const nodes: FakeNode[] = [];
  const launchers: VirtLauncher[] = [];
  const cleanups: Array<() => void> = [];

  afterEach(async () => {
    for (const n of nodes) await n.handler.stop();
    for (const l of launchers) await l.exit(0);
    for (const c of cleanups) c();
    for (const n of nodes) rmSync(n.root, { recursive: true, force: true });
    nodes.length = 0;
    launchers.length = 0;
    cleanups.length = 0;
  });

  const getVmi = () => store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'vm1', NS);

  async function launcherPod(n: FakeNode, vmi: VirtualMachineInstance, podName: string, labels = {}) {
    const created = await store.create<Pod & KubeObject>(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: podName,
        namespace: NS,
        labels: {
          'kubevirt.io': 'virt-launcher',
          'kubevirt.io/created-by': vmi.metadata?.uid ?? '',
          ...labels,
        },
        ownerReferences: [
          {
            apiVersion: 'kubevirt.io/v1',
            kind: 'VirtualMachineInstance',
            name: 'vm1',
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
    const driver = new FakeDriver({ host: n.host });
    const { launcher } = podLauncher(
      n,
      pod.metadata?.uid ?? '',
      { namespace: NS, name: 'vm1', uid: vmi.metadata?.uid ?? '' },
      () => driver,
      podName,
    );
    await launcher.start();
    launchers.push(launcher);
  }

  it('enables the new vCPUs on the target once the guest arrived, and records them', async () => {
    store = await EmbeddedStore.open();
    const n1 = await startFakeNode(store, 'node1', { rootPrefix: 'kvts-hcpu-' });
    const n2 = await startFakeNode(store, 'node2', {
      rootPrefix: 'kvts-hcpu-',
      migrationAddress: 'fake://node2',
    });
    nodes.push(n1, n2);
    cleanups.push(registerFakeHost('fake://node2', n2.host));
    const created = await store.create<VirtualMachineInstance & KubeObject>(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'vm1', namespace: NS, labels: { 'kubevirt.io/nodeName': 'node1' } },
      spec: {
        domain: {
          cpu: { sockets: 1, maxSockets: 4 },
          memory: { guest: '1Gi', maxGuest: '4Gi' },
          devices: {},
          resources: { requests: { memory: '1Gi' } },
        },
      },
      status: {
        phase: 'Scheduled',
        nodeName: 'node1',
        currentCPUTopology: { sockets: 1 },
        memory: { guestAtBoot: '1Gi', guestRequested: '1Gi' },
      },
    } as VirtualMachineInstance & KubeObject);
    await launcherPod(n1, created, 'virt-launcher-vm1-src');
    await waitFor('VMI Running on node1', async () => (await getVmi()).status?.phase === 'Running');
    expect(n1.host.domains.get('default_vm1')?.info.vcpus).toBe(1);
    expect(n1.host.domains.get('default_vm1')?.info.memoryKiB).toBe(1024 * 1024);

    // The VM controller's patches (2 sockets, 2Gi) and the VMI controller's conditions.
    const v = await getVmi();
    const t = new Date(Date.now() - 2000).toISOString().replace(/\.\d+Z$/, 'Z');
    await store.update(VmiResource, {
      ...v,
      spec: {
        ...v.spec,
        domain: {
          ...v.spec.domain,
          cpu: { sockets: 2, maxSockets: 4 },
          memory: { guest: '2Gi', maxGuest: '4Gi' },
          resources: { requests: { memory: '2Gi' } },
        },
      },
      status: {
        ...v.status,
        conditions: [
          ...(v.status?.conditions ?? []),
          { type: 'HotVCPUChange', status: 'True', lastTransitionTime: t },
          { type: 'HotMemoryChange', status: 'True', lastTransitionTime: t },
        ],
      },
    } as KubeObject);
    // Nothing happens on node1: no migration carried it yet.
    await new Promise((r) => setTimeout(r, 300));
    expect(n1.host.domains.get('default_vm1')?.info.vcpus).toBe(1);
    expect((await getVmi()).status?.currentCPUTopology?.sockets).toBe(1);

    // The migration controller's hand-off to node2.
    await launcherPod(n2, await getVmi(), 'virt-launcher-vm1-tgt', {
      'kubevirt.io/migrationJobUID': 'mig-cpu',
    });
    const w = await getVmi();
    await store.update(VmiResource, {
      ...w,
      metadata: {
        ...w.metadata,
        labels: { ...w.metadata?.labels, 'kubevirt.io/migrationTargetNodeName': 'node2' },
      },
      status: {
        ...w.status,
        migrationState: {
          migrationUid: 'mig-cpu',
          sourceNode: 'node1',
          targetNode: 'node2',
          targetPod: 'virt-launcher-vm1-tgt',
          mode: 'PreCopy',
        },
      },
    } as KubeObject);
    const done = await waitFor('the hotplug recorded on node2', async () => {
      const x = await getVmi();
      const hot = x.status?.conditions?.some((c) => c.type === 'HotVCPUChange');
      return x.status?.nodeName === 'node2' && x.status.currentCPUTopology?.sockets === 2 && !hot
        ? x
        : undefined;
    });
    expect(done.status?.migrationState?.completed).toBe(true);
    const dom = n2.host.domains.get('default_vm1');
    expect(dom?.info.vcpus).toBe(2);
    expect(dom?.boots).toBe(1);
    expect(dom?.info.memoryKiB).toBe(2 * 1024 * 1024);
    expect(done.status?.memory?.guestAtBoot).toBe('1Gi');
    // The guest arrived with its one vCPU and 1Gi: the target domain was made at the current ones.
    expect(dom?.vmi.spec.domain.cpu?.sockets).toBe(1);
    expect(dom?.vmi.spec.domain.memory?.guest).toBe('1Gi');
  });
});

describe('migratedForHotplug and withCurrentCpus', () => {
  const vmi = (status: object): VirtualMachineInstance =>
    ({
      spec: { domain: { devices: {}, cpu: { sockets: 2, maxSockets: 4 } } },
      status,
    }) as VirtualMachineInstance;
  const cond = (t: string) => ({
    conditions: [{ type: 'HotVCPUChange', status: 'True', lastTransitionTime: t }],
  });
  const landed = (start: string) => ({
    nodeName: 'b',
    migrationState: { completed: true, targetNode: 'b', startTimestamp: start },
  });

  it('is the last migration only when it succeeded here and started after the condition', () => {
    expect(
      migratedForHotplug(
        vmi({ ...cond('2026-12-04T21:00:00Z'), ...landed('2026-12-04T21:00:05Z') }),
        'HotVCPUChange',
      ),
    ).toBe(true);
    // An older migration (before the change was asked for) left it in an old-sized pod.
    expect(
      migratedForHotplug(
        vmi({ ...cond('2026-12-04T21:00:05Z'), ...landed('2026-12-04T21:00:00Z') }),
        'HotVCPUChange',
      ),
    ).toBe(false);
    const failed = landed('2026-12-04T21:00:05Z');
    (failed.migrationState as { failed?: boolean }).failed = true;
    expect(migratedForHotplug(vmi({ ...cond('2026-12-04T21:00:00Z'), ...failed }), 'HotVCPUChange')).toBe(
      false,
    );
    expect(migratedForHotplug(vmi(landed('2026-12-04T21:00:05Z')), 'HotVCPUChange')).toBe(false);
  });

  it("renders a migration target at the guest's current sockets", () => {
    const v = vmi({ currentCPUTopology: { sockets: 1 } });
    expect(withCurrentCpus(v).spec.domain.cpu).toEqual({ sockets: 1, maxSockets: 4 });
    const same = vmi({ currentCPUTopology: { sockets: 2 } });
    expect(withCurrentCpus(same)).toBe(same);
  });
});
