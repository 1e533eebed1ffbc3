import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { NotFoundError } from '../../../../src/controllers/runtime/errors';
import { EventType, PodType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import {
  VirtController,
  type WriteRecord,
} from '../../../../src/controllers/virt-controller/virt-controller';
import { NodeSimulator, type SimRole } from '../../../support/node-simulator';
import { waitFor } from '../../../support/wait';

function vm(name: string, runStrategy: string): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace: 'default' },
    spec: {
      runStrategy,
      template: {
        metadata: { labels: { 'kubevirt.io/vm': name } },
        spec: {
          domain: {
            devices: { disks: [{ name: 'containerdisk', disk: { bus: 'virtio' } }] },
            resources: { requests: { memory: '128Mi' } },
          },
          volumes: [
            {
              name: 'containerdisk',
              containerDisk: { image: 'quay.io/kubevirt/cirros-container-disk-demo' },
            },
          ],
        },
      },
    },
  };
}

describe('VM to running VMI on the embedded store', () => {
  let store: EmbeddedStore;
  let ctrl: VirtController;
  let sim: NodeSimulator;
  let writes: WriteRecord[];
  let simWrites: Array<{ role: SimRole; kind: string; name: string }>;

  beforeEach(async () => {
    store = await EmbeddedStore.open();
    writes = [];
    simWrites = [];
    ctrl = new VirtController({
      client: store,
      config: createClusterConfig({}, { hostArchitecture: 'amd64' }),
      launcher: { launcherImage: 'kubevirt-ts/launcher:test' },
      onWrite: (w) => writes.push(w),
      onError: () => {},
    });
    sim = new NodeSimulator(store, { onWrite: (role, kind, name) => simWrites.push({ role, kind, name }) });
    await ctrl.start();
    await sim.start();
  });

  afterEach(async () => {
    await sim.stop();
    await ctrl.stop();
    await store.close?.();
  });

  const getVm = (name: string) => store.get<VirtualMachine & KubeObject>(VirtualMachineType, name, 'default');
  const getVmi = (name: string) =>
    store.get<VirtualMachineInstance & KubeObject>(VmiResource, name, 'default');

  it('runStrategy Always: VMI created, launcher pod rendered, VMI Running, VM Running and ready, in at most 5 writes', async () => {
    await store.create(VirtualMachineType, vm('vm1', 'Always') as KubeObject);
    const v = await waitFor('VM Running', async () => {
      const x = await getVm('vm1');
      return x.status?.printableStatus === 'Running' && x.status.ready ? x : undefined;
    });
    expect(v.status).toMatchObject({
      created: true,
      ready: true,
      runStrategy: 'Always',
      printableStatus: 'Running',
      desiredGeneration: 1,
      observedGeneration: 1,
    });
    expect(v.status!.conditions).toContainEqual(expect.objectContaining({ type: 'Ready', status: 'True' }));

    const vmi = await getVmi('vm1');
    expect(vmi.status!.phase).toBe('Running');
    expect(vmi.status!.nodeName).toBe('node01');
    expect(vmi.metadata!.labels!['kubevirt.io/nodeName']).toBe('node01');
    expect(vmi.metadata!.ownerReferences![0]).toMatchObject({
      kind: 'VirtualMachine',
      name: 'vm1',
      controller: true,
    });
    expect(vmi.metadata!.finalizers).toEqual([
      'kubevirt.io/virtualMachineControllerFinalize',
      'kubevirt.io/foregroundDeleteVirtualMachine',
    ]);
    expect(vmi.status!.phaseTransitionTimestamps!.map((t) => t.phase)).toEqual([
      'Scheduling',
      'Scheduled',
      'Running',
    ]);

    const pods = (
      await store.list<Pod & KubeObject>(PodType, {
        namespace: 'default',
        labelSelector: 'kubevirt.io=virt-launcher',
      })
    ).items;
    expect(pods).toHaveLength(1);
    expect(pods[0].metadata!.labels!['kubevirt.io/created-by']).toBe(vmi.metadata!.uid);
    expect(pods[0].spec!.containers[0].args).toEqual(
      expect.arrayContaining(['--name', 'vm1', '--uid', vmi.metadata!.uid!]),
    );

    // Writes of VMIs and launcher pods by our components for this VMI:
    // VM controller: VMI create; VMI controller: pod create, Scheduling, Scheduled; node agent: Running.
    const ours = writes.filter((w) => w.kind !== 'VirtualMachine');
    const handler = simWrites.filter((w) => w.role === 'handler');
    expect(ours.map((w) => `${w.controller}:${w.kind}:${w.verb}`)).toEqual([
      'vm:VirtualMachineInstance:create',
      'vmi:Pod:create',
      'vmi:VirtualMachineInstance:update',
      'vmi:VirtualMachineInstance:update',
    ]);
    expect(handler).toHaveLength(1);
    expect(ours.length + handler.length).toBeLessThanOrEqual(5);
    // The simulated scheduler and kubelet bind the pod and report it running: 2 pod writes.
    expect(simWrites.filter((w) => w.role !== 'handler')).toHaveLength(2);

    // Events as upstream emits them.
    const events = (
      await store.list<KubeObject & { reason: string; message: string; involvedObject: { kind: string } }>(
        EventType,
        { namespace: 'default' },
      )
    ).items;
    expect(events).toContainEqual(
      expect.objectContaining({
        reason: 'SuccessfulCreate',
        message: 'Started the virtual machine by creating the new virtual machine instance vm1',
        involvedObject: expect.objectContaining({ kind: 'VirtualMachine' }),
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        reason: 'SuccessfulCreate',
        message: `Created virtual machine pod ${pods[0].metadata!.name}`,
        involvedObject: expect.objectContaining({ kind: 'VirtualMachineInstance' }),
      }),
    );
  });

  it('runStrategy Halted creates nothing and reports Stopped', async () => {
    await store.create(VirtualMachineType, vm('vm2', 'Halted') as KubeObject);
    const v = await waitFor('VM Stopped', async () => {
      const x = await getVm('vm2');
      return x.status?.printableStatus === 'Stopped' ? x : undefined;
    });
    expect(v.status).toMatchObject({ created: false, ready: false });
    await expect(getVmi('vm2')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('stopping a running VM (Always -> Halted) deletes the VMI and its pod', async () => {
    await store.create(VirtualMachineType, vm('vm3', 'Always') as KubeObject);
    await waitFor('VM Running', async () => (await getVm('vm3')).status?.printableStatus === 'Running');
    const cur = await getVm('vm3');
    await store.update(VirtualMachineType, {
      ...cur,
      spec: { ...cur.spec, runStrategy: 'Halted' },
    } as KubeObject);
    await waitFor('VMI gone', async () => {
      try {
        await getVmi('vm3');
        return false;
      } catch (err) {
        return err instanceof NotFoundError;
      }
    });
    const v = await waitFor('VM Stopped', async () => {
      const x = await getVm('vm3');
      return x.status?.printableStatus === 'Stopped' ? x : undefined;
    });
    expect(v.status!.created).toBe(false);
    await waitFor(
      'pod gone',
      async () => (await store.list(PodType, { namespace: 'default' })).items.length === 0,
    );
  });

  it('a restart request (Stop for the current VMI under Always) gives a new VMI', async () => {
    await store.create(VirtualMachineType, vm('vm4', 'Always') as KubeObject);
    await waitFor('VM Running', async () => (await getVm('vm4')).status?.printableStatus === 'Running');
    const first = await getVmi('vm4');
    const cur = await getVm('vm4');
    await store.updateStatus(VirtualMachineType, {
      ...cur,
      status: {
        ...cur.status,
        stateChangeRequests: [{ action: 'Stop', uid: first.metadata!.uid }, { action: 'Start' }],
      },
    } as KubeObject);
    const second = await waitFor('new VMI Running', async () => {
      const x = await getVmi('vm4');
      return x.metadata!.uid !== first.metadata!.uid && x.status?.phase === 'Running' ? x : undefined;
    });
    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    await waitFor(
      'requests trimmed',
      async () => (await getVm('vm4')).status?.stateChangeRequests === undefined,
    );
  });

  it('deleting a VM: the VM controller deletes its VMI and releases the VM once the VMI is gone (its finalizer)', async () => {
    await store.create(VirtualMachineType, vm('vm5', 'Always') as KubeObject);
    await waitFor('VM Running', async () => (await getVm('vm5')).status?.printableStatus === 'Running');
    expect((await getVm('vm5')).metadata!.finalizers).toEqual([
      'kubevirt.io/virtualMachineControllerFinalize',
    ]);
    writes.length = 0;
    await store.delete(VirtualMachineType, 'vm5', { namespace: 'default' });
    const gone = async (get: () => Promise<unknown>) =>
      get().then(
        () => false,
        (err) => err instanceof NotFoundError,
      );
    // The VM stays (Terminating) as long as its VMI does.
    await waitFor('VM gone', async () => {
      const vmGone = await gone(() => getVm('vm5'));
      if (vmGone) expect(await gone(() => getVmi('vm5'))).toBe(true);
      return vmGone;
    });
    await waitFor(
      'pod gone',
      async () => (await store.list(PodType, { namespace: 'default' })).items.length === 0,
    );
    const vmWrites = writes.filter((w) => w.controller === 'vm').map((w) => `${w.kind}:${w.verb}`);
    // The VMI deleted by the VM controller (not left to the garbage collector), its
    // finalizer patched off once Succeeded, then the VM's.
    expect(vmWrites).toContain('VirtualMachineInstance:delete');
    expect(vmWrites).toContain('VirtualMachineInstance:patch');
    expect(vmWrites.at(-1)).toBe('VirtualMachine:patch');
  });

  it('deleting a VM with propagationPolicy Orphan leaves its VMI running, no longer owned', async () => {
    await store.create(VirtualMachineType, vm('vm6', 'Always') as KubeObject);
    await waitFor('VM Running', async () => (await getVm('vm6')).status?.printableStatus === 'Running');
    await store.delete(VirtualMachineType, 'vm6', { namespace: 'default', propagationPolicy: 'Orphan' });
    await waitFor('VM gone', () =>
      getVm('vm6').then(
        () => false,
        (err) => err instanceof NotFoundError,
      ),
    );
    const vmi = await waitFor('VMI orphaned', async () => {
      const x = await getVmi('vm6');
      return x.metadata?.ownerReferences?.length ? undefined : x;
    });
    expect(vmi.metadata?.deletionTimestamp).toBeUndefined();
    expect(vmi.status?.phase).toBe('Running');
  });
});
