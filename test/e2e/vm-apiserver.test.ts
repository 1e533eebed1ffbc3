/**
 * End to end on a real control plane (kube-apiserver, kube-controller-manager,
 * kube-scheduler): virt-handler and the local pod runtime register the node, the real
 * scheduler binds the launcher Pod to it, the tiny guest boots under emulation, VMI and VM
 * go Running; stop shuts the guest down and the Pod goes, VM Stopped.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdsDir } from '../../scripts/gen-crds';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { NodeType, PodType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER, POWEROFF_MARKER, type SerialConsole } from '../support/guest';
import {
  type ControlPlane,
  available as kubeAvailable,
  kubeBinDir,
  unavailableReason as kubeUnavailableReason,
  startControlPlane,
} from '../support/kube';
import { domainExists, e2eRun, NodeHarness, tinyGuestVm, waitFor } from './node-harness';

const kubectl = path.join(kubeBinDir, 'kubectl');
const run = e2eRun('node end to end (real control plane)', () =>
  !kubeAvailable() ? kubeUnavailableReason : !existsSync(kubectl) ? `no kubectl at ${kubectl}` : undefined,
);

describe.runIf(run)('VM end to end on a real control plane with a real guest', () => {
  const ns = 'default';
  const name = `e2e-api-${process.pid}`;
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let node: NodeHarness;
  let console_: SerialConsole | undefined;
  let pod: Pod;

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: true, scheduler: true });
    const applied = spawnSync(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', crdsDir], {
      encoding: 'utf8',
    });
    expect(applied.status, applied.stderr).toBe(0);
    const waited = spawnSync(
      kubectl,
      [
        '--kubeconfig',
        cp.kubeconfigPath,
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        'crd/virtualmachines.kubevirt.io',
        'crd/virtualmachineinstances.kubevirt.io',
      ],
      { encoding: 'utf8' },
    );
    expect(waited.status, waited.stderr).toBe(0);
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 200, burst: 400 });
    node = new NodeHarness({ client, nodeName: `node-api-${process.pid}`, bindPending: false });
    await node.start();
  }, 240_000);

  afterAll(async () => {
    console_?.close();
    await node?.close(`${ns}_${name}`);
    client?.close();
    await cp?.stop();
  }, 120_000);

  it('the real scheduler binds the launcher pod to the registered node; the guest boots; VMI and VM Running', async () => {
    const n = await client.get<KubeObject>(NodeType, node.o.nodeName);
    expect(n.metadata?.labels?.['kubevirt.io/schedulable']).toBe('true');
    await client.create(VirtualMachineType, tinyGuestVm(name, ns) as KubeObject);
    const vmi = await waitFor(
      'the VMI scheduled',
      async () => {
        const v = await node.getVmi(ns, name);
        return v.status?.nodeName ? v : undefined;
      },
      40_000,
    ).catch(async (e) => {
      const vm = await node.getVm(ns, name);
      const n = await client.get<KubeObject & { spec?: unknown }>(NodeType, node.o.nodeName);
      throw new Error(
        `${(e as Error).message}; VM status: ${JSON.stringify(vm.status)}; node spec: ${JSON.stringify(n.spec)}`,
      );
    });
    expect(vmi.status?.nodeName).toBe(node.o.nodeName);
    pod = await waitFor('the launcher pod', () => node.podOf(vmi));
    console_ = await node.console(pod);
    await console_.waitFor(BOOT_MARKER, 180_000);
    await waitFor(
      'VMI Running',
      async () => (await node.getVmi(ns, name)).status?.phase === 'Running',
      120_000,
    );
    await waitFor(
      'VM Running',
      async () => (await node.getVm(ns, name)).status?.printableStatus === 'Running',
      120_000,
    );
  }, 400_000);

  it('stop: guest powered off, pod gone, domain gone, VM Stopped', async () => {
    const vm = await node.getVm(ns, name);
    await client.update(VirtualMachineType, {
      ...vm,
      spec: { ...vm.spec, runStrategy: 'Halted' },
    } as KubeObject);
    await console_?.waitFor(POWEROFF_MARKER, 120_000);
    await waitFor(
      'VM Stopped',
      async () => (await node.getVm(ns, name)).status?.printableStatus === 'Stopped',
      180_000,
    );
    await waitFor(
      'the pod gone',
      async () => {
        const pods = await client.list<Pod & KubeObject>(PodType, { namespace: ns });
        return !pods.items.some((p) => p.metadata?.uid === pod.metadata?.uid);
      },
      120_000,
    );
    await waitFor('the domain gone', () => !domainExists(`${ns}_${name}`), 120_000);
  }, 400_000);

  // The VMI controller deletes a final VMI's pods itself (as upstream does), so the stop
  // above never reaches the garbage collector. Here virt-controller is stopped, so nothing
  // of ours deletes the pod: only kube-controller-manager's garbage collector, following
  // the pod's ownerReference to the deleted VMI, can mark it for deletion (the pod runtime
  // then stops the launcher and finishes the graceful deletion, as a kubelet would).
  it('a VMI deleted while virt-controller is down: the garbage collector removes its pod through the owner reference', async () => {
    const gcName = `${name}-gc`;
    const template = tinyGuestVm(gcName, ns).spec?.template;
    const vmi = await client.create<VirtualMachineInstance & KubeObject>(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: gcName, namespace: ns, labels: template?.metadata?.labels },
      spec: template?.spec,
    } as VirtualMachineInstance & KubeObject);
    const gcPod = await waitFor(
      'the pod bound and running',
      async () => {
        const pods = await client.list<Pod & KubeObject>(PodType, {
          namespace: ns,
          labelSelector: `kubevirt.io/created-by=${vmi.metadata?.uid}`,
        });
        const p = pods.items[0];
        return p?.spec?.nodeName && p.status?.phase === 'Running' ? p : undefined;
      },
      120_000,
    );
    expect(gcPod.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstance',
        name: gcName,
        uid: vmi.metadata?.uid,
        controller: true,
        blockOwnerDeletion: true,
      }),
    ]);
    await node.controller?.stop();
    node.controller = undefined;
    // Without the controller the VMI finalizer would never be removed; drop it by hand.
    await client.patch(
      VmiResource,
      gcName,
      { metadata: { finalizers: null } },
      { namespace: ns, type: 'merge' },
    );
    await client.delete(VmiResource, gcName, { namespace: ns, propagationPolicy: 'Background' });
    await waitFor(
      'the VMI gone',
      async () =>
        !(await client.list(VmiResource, { namespace: ns })).items.some((v) => v.metadata?.name === gcName),
      60_000,
    );
    await waitFor(
      'the pod garbage-collected',
      async () => {
        const pods = await client.list<Pod & KubeObject>(PodType, { namespace: ns });
        return !pods.items.some((p) => p.metadata?.uid === gcPod.metadata?.uid);
      },
      120_000,
    );
    await waitFor(
      'the launcher stopped',
      () => node.runtime?.pidOf(gcPod.metadata?.uid ?? '') === undefined,
      60_000,
    );
    await waitFor('the domain gone', () => !domainExists(`${ns}_${gcName}`), 120_000);
  }, 400_000);
});
