/**
 * The main flows on a real kube-apiserver and kube-scheduler: the generated CRDs applied,
 * a node object offering KubeVirt's device resources, the virt-controller on the
 * Kubernetes client, and the node simulator as kubelet and node agent (the real
 * scheduler binds the launcher pods).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { NotFoundError } from '../../../../src/controllers/runtime/errors';
import { KubeClient } from '../../../../src/controllers/runtime/kube/client';
import { NodeType, PodType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import {
  VirtController,
  type WriteRecord,
} from '../../../../src/controllers/virt-controller/virt-controller';
import { applyCrdsEstablished } from '../../../support/crd-established';
import { apiserverTestsEnabled, type ControlPlane, startControlPlane } from '../../../support/kube';
import { NodeSimulator, type SimRole } from '../../../support/node-simulator';
import { waitFor } from '../services/embedded-harness';
import { instancetypeRevisionScenario } from './instancetype-revisions-case';

const run = apiserverTestsEnabled('kube-apiserver (virt-controller flows)');
const NS = 'default';

function vm(name: string, runStrategy: string, nodeSelector?: Record<string, string>): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace: NS },
    spec: {
      runStrategy,
      template: {
        metadata: { labels: { 'kubevirt.io/vm': name } },
        spec: {
          nodeSelector,
          domain: { devices: {}, resources: { requests: { memory: '128Mi' } } },
        },
      },
    },
  };
}

describe.skipIf(!run)('virt-controller on a real kube-apiserver', () => {
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let ctrl: VirtController;
  let sim: NodeSimulator;
  const writes: WriteRecord[] = [];
  const simWrites: Array<{ role: SimRole; name: string }> = [];
  const errors: string[] = [];

  beforeAll(async () => {
    // Our own control plane: a scheduler but no controller-manager, so nothing taints the
    // kubelet-less node object.
    cp = await startControlPlane({ controllerManager: false, scheduler: true });
    applyCrdsEstablished(cp.kubeconfigPath, [
      'virtualmachines.kubevirt.io',
      'virtualmachineinstances.kubevirt.io',
      'virtualmachineinstancetypes.instancetype.kubevirt.io',
      'virtualmachinepreferences.instancetype.kubevirt.io',
    ]);
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 200, burst: 400 });
    const node = (await client.create(NodeType, {
      apiVersion: 'v1',
      kind: 'Node',
      // The labels virt-handler's node labeller would set for this host.
      metadata: {
        name: 'node01',
        labels: {
          'kubevirt.io/schedulable': 'true',
          'kubernetes.io/hostname': 'node01',
          'kubernetes.io/arch': 'amd64',
          'machine-type.node.kubevirt.io/q35': 'true',
        },
      },
    } as KubeObject)) as KubeObject;
    const capacity = {
      cpu: '16',
      memory: '64Gi',
      pods: '110',
      'ephemeral-storage': '100Gi',
      'devices.kubevirt.io/kvm': '110',
      'devices.kubevirt.io/tun': '110',
      'devices.kubevirt.io/vhost-net': '110',
    };
    await client.updateStatus(NodeType, {
      ...node,
      status: {
        capacity,
        allocatable: capacity,
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'simulated',
            lastHeartbeatTime: new Date().toISOString(),
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      },
    } as KubeObject);
    // Admission taints a new node not-ready until its kubelet reports; there is no kubelet
    // and no node controller here, so drop the taint once the status says Ready.
    const withStatus = await client.get<KubeObject & { spec?: { taints?: unknown[] } }>(NodeType, 'node01');
    await client.update(NodeType, { ...withStatus, spec: { ...withStatus.spec, taints: [] } } as KubeObject);
    ctrl = new VirtController({
      client,
      config: createClusterConfig({}, { hostArchitecture: 'amd64' }),
      launcher: { launcherImage: 'kubevirt-ts/launcher:test' },
      namespace: NS,
      instancetypes: true,
      onWrite: (w) => writes.push(w),
      onError: (c, k, e) => errors.push(`${c} ${k}: ${e.message}`),
    });
    sim = new NodeSimulator(client, {
      nodeNames: ['node01'],
      schedule: false,
      onWrite: (role, _k, name) => simWrites.push({ role, name }),
    });
    await ctrl.start();
    await sim.start();
  }, 180_000);

  afterAll(async () => {
    await sim?.stop();
    await ctrl?.stop();
    client?.close();
    await cp?.stop();
  });

  /** The VM, VMI and pods, for a failure message. */
  const dump = async (n: string) => {
    const part = async (f: () => Promise<unknown>) => {
      try {
        return JSON.stringify(await f());
      } catch (err) {
        return (err as Error).message;
      }
    };
    return [
      `vm.status=${await part(async () => (await getVm(n)).status)}`,
      `vmi.status=${await part(async () => (await getVmi(n)).status)}`,
      `pods=${await part(async () => (await client.list(PodType, { namespace: NS })).items.map((p) => ({ name: p.metadata?.name, spec: { nodeName: (p.spec as { nodeName?: string }).nodeName }, status: p.status })))}`,
      `errors=${JSON.stringify(errors)}`,
    ].join('\n');
  };
  const getVm = (n: string) => client.get<VirtualMachine & KubeObject>(VirtualMachineType, n, NS);
  const getVmi = (n: string) => client.get<VirtualMachineInstance & KubeObject>(VmiResource, n, NS);

  it('starts a VM: the scheduler binds the launcher pod, the VMI runs, in at most 5 writes', async () => {
    const before = writes.length;
    await client.create(VirtualMachineType, vm('real1', 'Always') as KubeObject);
    const v = await waitFor(
      'VM Running',
      async () => {
        const x = await getVm('real1');
        return x.status?.printableStatus === 'Running' && x.status.ready ? x : undefined;
      },
      30_000,
    ).catch(async (err) => {
      throw new Error(`${err.message}; state: ${await dump('real1')}`);
    });
    expect(v.status).toMatchObject({ created: true, ready: true, printableStatus: 'Running' });
    const vmi = await getVmi('real1');
    expect(vmi.status).toMatchObject({ phase: 'Running', nodeName: 'node01' });
    const ours = writes.slice(before).filter((w) => w.kind !== 'VirtualMachine');
    const handler = simWrites.filter((w) => w.role === 'handler' && w.name === 'real1');
    expect(ours.length + handler.length).toBeLessThanOrEqual(5);
    expect(ours.map((w) => `${w.controller}:${w.kind}:${w.verb}`)).toEqual([
      'vm:VirtualMachineInstance:create',
      'vmi:Pod:create',
      'vmi:VirtualMachineInstance:update',
      'vmi:VirtualMachineInstance:update',
    ]);
  });

  it("surfaces an unschedulable launcher pod with the scheduler's reason", async () => {
    await client.create(VirtualMachineType, vm('real2', 'Always', { zone: 'nowhere' }) as KubeObject);
    const v = await waitFor(
      'ErrorUnschedulable',
      async () => {
        const x = await getVm('real2');
        return x.status?.printableStatus === 'ErrorUnschedulable' ? x : undefined;
      },
      30_000,
    );
    expect(v.status!.conditions).toContainEqual(
      expect.objectContaining({ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }),
    );
    const vmi = await getVmi('real2');
    expect(vmi.status!.phase).toBe('Scheduling');
    const cond = vmi.status!.conditions!.find((c) => c.type === 'PodScheduled');
    expect(cond!.message).toMatch(
      /^0\/1 nodes are available: 1 node\(s\) didn't match Pod's node affinity\/selector/,
    );
  });

  it('stops a VM: VMI and launcher pod are deleted, the VM reports Stopped', async () => {
    await waitFor(
      'real1 Running',
      async () => (await getVm('real1')).status?.printableStatus === 'Running',
      30_000,
    );
    const cur = await getVm('real1');
    await client.update(VirtualMachineType, {
      ...cur,
      spec: { ...cur.spec, runStrategy: 'Halted' },
    } as KubeObject);
    await waitFor(
      'VMI gone',
      async () => {
        try {
          await getVmi('real1');
          return false;
        } catch (err) {
          return err instanceof NotFoundError;
        }
      },
      30_000,
    );
    await waitFor(
      'VM Stopped',
      async () => (await getVm('real1')).status?.printableStatus === 'Stopped',
      30_000,
    );
  });

  it('instance type revisions: an edit leaves the next start unchanged, clearing the reference picks it up', async () => {
    await instancetypeRevisionScenario(client, NS, 'revs', 30_000);
  });
});
