/**
 * virt-handler ending a deleted VMI's guest (one node on the embedded store, a real
 * in-process launcher on a fake host whose guest ignores ACPI): a grace period of 0 kills
 * the guest at once, and one lowered to 0 while a 180 s shutdown runs kills it then (what
 * `virtctl stop --force --grace-period=0` does, through virt-api's patch of the VMI).
 * Before, 0 read as "unset" and the guest waited out the launcher's grace period.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import type { Pod } from '../../../src/controllers/common/pod';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { FakeDriver } from '../../../src/drivers';
import { waitFor } from '../../support/wait';
import { type FakeNode, podLauncher, startFakeNode } from './fake-node';

const NS = 'default';
type Vmi = VirtualMachineInstance & KubeObject;

describe('virt-handler: a deleted VMI with a grace period of 0', () => {
  let store: EmbeddedStore;
  let node: FakeNode | undefined;
  let launcher: VirtLauncher | undefined;

  afterEach(async () => {
    await node?.handler.stop();
    await launcher?.exit(0);
    if (node) rmSync(node.root, { recursive: true, force: true });
    node = undefined;
    launcher = undefined;
  });

  /** A Running VMI (grace `grace` s, kept by a finalizer once deleted) and its launcher. */
  async function running(grace: number) {
    store = await EmbeddedStore.open();
    node = await startFakeNode(store, 'node1', { rootPrefix: 'kvts-hshut-' });
    const n = node;
    const vmi = await store.create<Vmi>(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: {
        name: 'vm1',
        namespace: NS,
        labels: { 'kubevirt.io/nodeName': n.name },
        finalizers: ['kubevirt.io/test'],
      },
      spec: {
        terminationGracePeriodSeconds: grace,
        domain: { devices: {}, resources: { requests: { memory: '64Mi' } } },
      },
      status: { phase: 'Scheduled', nodeName: n.name },
    } as Vmi);
    const created = await store.create<Pod & KubeObject>(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'virt-launcher-vm1',
        namespace: NS,
        labels: { 'kubevirt.io': 'virt-launcher', 'kubevirt.io/created-by': vmi.metadata?.uid ?? '' },
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
    // The guest ignores ACPI; the launcher's own (pod) grace period is 5 s.
    const driver = new FakeDriver({ host: n.host, guestHonoursShutdown: false });
    const l = podLauncher(
      n,
      pod.metadata?.uid ?? '',
      { namespace: NS, name: 'vm1', uid: vmi.metadata?.uid ?? '' },
      () => driver,
    );
    launcher = l.launcher;
    await launcher.start();
    await waitFor(
      'VMI Running',
      async () => (await store.get<Vmi>(VmiResource, 'vm1', NS)).status?.phase === 'Running',
    );
    return n;
  }

  /** The domain's state; undefined once the launcher dropped it (after the guest ended). */
  const domainState = (n: FakeNode) => n.host.domains.get(`${NS}_vm1`)?.info.state;
  const ended = (n: FakeNode) => domainState(n) === 'shutoff' || domainState(n) === undefined;

  it('kills the guest at once', async () => {
    const n = await running(0);
    const t0 = Date.now();
    await store.delete(VmiResource, 'vm1', { namespace: NS });
    await waitFor('the guest ended', () => ended(n), 4_000, 20);
    expect(Date.now() - t0).toBeLessThan(4_000);
  });

  it('a grace period lowered to 0 during a 180 s shutdown kills the guest then', async () => {
    const n = await running(180);
    await store.delete(VmiResource, 'vm1', { namespace: NS });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(domainState(n)).toBe('running');
    const t0 = Date.now();
    await store.patch(
      VmiResource,
      'vm1',
      { spec: { terminationGracePeriodSeconds: 0 } },
      { namespace: NS, type: 'merge' },
    );
    await waitFor('the guest ended', () => ended(n), 4_000, 20);
    expect(Date.now() - t0).toBeLessThan(4_000);
  });
});
