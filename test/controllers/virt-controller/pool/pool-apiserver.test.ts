/**
 * VirtualMachinePool rollout on a real kube-apiserver (the generated CRDs, so the pool's
 * generation, the ControllerRevisions' `data` and the UID-preconditioned VMI deletes go
 * through the real API), with the virt-controller on the Kubernetes client, the real
 * kube-scheduler, and the node simulator as kubelet and node agent. One pool: a template
 * edit under Proactive with maxUnavailable 1 restarts its VMIs and prunes the old
 * revision; under Opportunistic a second edit reaches the VMs but not their VMIs.
 * Autohealing is proven on the embedded store only: a replaced VM's old VMI is removed by
 * the garbage collector (VMs carry no finalizer here), and a fresh control plane's
 * collector does not yet watch the just-applied CRDs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachinePool,
} from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { KubeClient } from '../../../../src/controllers/runtime/kube/client';
import { ControllerRevisionType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import { retryOnConflict } from '../../../../src/controllers/runtime/retry-on-conflict';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { VirtualMachinePoolType } from '../../../../src/controllers/virt-controller/pool/controller';
import { POOL_REVISION_LABEL } from '../../../../src/controllers/virt-controller/pool/vm-template';
import { VirtController } from '../../../../src/controllers/virt-controller/virt-controller';
import { applyCrdsEstablished } from '../../../support/crd-established';
import { fixture } from '../../../support/fixtures';
import {
  apiserverTestsEnabled,
  type ControlPlane,
  registerReadyNode,
  startControlPlane,
} from '../../../support/kube';
import { NodeSimulator } from '../../../support/node-simulator';
import { waitFor } from '../../../support/wait';

const run = apiserverTestsEnabled('kube-apiserver (pool controller)');
const NS = 'default';
const NAME = 'vmpool-containerdisk';

const vmiReady = (v: VirtualMachineInstance) =>
  !v.metadata?.deletionTimestamp &&
  v.status?.phase === 'Running' &&
  (v.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

describe.skipIf(!run)('VirtualMachinePool controller on a real kube-apiserver', () => {
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let ctrl: VirtController;
  let sim: NodeSimulator;
  const errors: string[] = [];

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false, scheduler: true });
    applyCrdsEstablished(cp.kubeconfigPath, [
      'virtualmachines.kubevirt.io',
      'virtualmachineinstances.kubevirt.io',
      'virtualmachinepools.pool.kubevirt.io',
    ]);
    // A kubelet-less node the real scheduler binds the launcher pods to.
    await registerReadyNode(cp.kubeconfigPath, 'node01', {
      labels: {
        'kubevirt.io/schedulable': 'true',
        'kubernetes.io/arch': 'amd64',
        'machine-type.node.kubevirt.io/q35': 'true',
      },
      capacity: {
        cpu: '16',
        memory: '64Gi',
        pods: '110',
        'ephemeral-storage': '100Gi',
        'devices.kubevirt.io/kvm': '110',
        'devices.kubevirt.io/tun': '110',
        'devices.kubevirt.io/vhost-net': '110',
      },
    });
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 200, burst: 400 });
    ctrl = new VirtController({
      client,
      config: createClusterConfig({}, { hostArchitecture: 'amd64' }),
      launcher: { launcherImage: 'kubevirt-ts/launcher:test' },
      namespace: NS,
      pools: true,
      onError: (c, k, e) => errors.push(`${c} ${k}: ${e.message}`),
    });
    sim = new NodeSimulator(client, { schedule: false });
    await ctrl.start();
    await sim.start();
  }, 180_000);

  afterAll(async () => {
    await sim?.stop();
    await ctrl?.stop();
    client?.close();
    await cp?.stop();
  });

  const getPool = () => client.get<VirtualMachinePool & KubeObject>(VirtualMachinePoolType, NAME, NS);
  const vms = async () =>
    (await client.list<VirtualMachine & KubeObject>(VirtualMachineType, { namespace: NS })).items.filter(
      (v) => !v.metadata?.deletionTimestamp,
    );
  const vmis = async () =>
    (await client.list<VirtualMachineInstance & KubeObject>(VmiResource, { namespace: NS })).items;
  // The controller writes the pool's status meanwhile: read, edit and replace again on a conflict.
  const edit = (f: (p: VirtualMachinePool) => void) =>
    retryOnConflict(async () => {
      const next = structuredClone(await getPool());
      f(next);
      await client.update(VirtualMachinePoolType, next as KubeObject);
    });
  /** The pool's status, VMs and VMIs, and the controller's errors, for a failure message. */
  const dump = async () =>
    JSON.stringify({
      pool: (await getPool()).status,
      vms: (await vms()).map((v) => [v.metadata?.name, v.metadata?.labels, v.status]),
      vmis: (await vmis()).map((v) => [v.metadata?.name, v.metadata?.labels, v.status?.phase]),
      errors,
    });
  const onRevision = (rev: string) =>
    waitFor(
      `all VMIs on ${rev} and ready`,
      async () => {
        const list = await vmis();
        return list.length === 2 &&
          list.every((v) => v.metadata!.labels![POOL_REVISION_LABEL] === rev && vmiReady(v))
          ? list
          : undefined;
      },
      30_000,
    ).catch(async (err) => {
      throw new Error(`${(err as Error).message}\n${await dump()}`);
    });

  it('rolls a template out under Proactive and waits under Opportunistic', async () => {
    const pool = fixture<VirtualMachinePool>('vmpool-containerdisk.yaml');
    pool.metadata = { ...pool.metadata, namespace: NS };
    pool.spec = {
      ...pool.spec,
      replicas: 2,
      maxUnavailable: 1,
      updateStrategy: { proactive: { selectionPolicy: { sortPolicy: 'AscendingOrder' } } },
    };
    await client.create(VirtualMachinePoolType, pool as KubeObject);
    const first = await onRevision(`${NAME}-1`);
    await waitFor('pool status 2/2', async () => (await getPool()).status?.readyReplicas === 2, 30_000);

    // Proactive: the edit restarts both VMIs into revision 2; revision 1 is pruned.
    await edit((p) => {
      p.spec.virtualMachineTemplate.spec!.template.spec!.domain.memory = { guest: '256Mi' };
    });
    const second = await onRevision(`${NAME}-2`);
    for (const v of second) expect(v.spec.domain.memory!.guest).toBe('256Mi');
    const uids = (l: VirtualMachineInstance[]) => l.map((v) => v.metadata!.uid);
    expect(uids(second)).not.toContain(uids(first)[0]);
    expect(uids(second)).not.toContain(uids(first)[1]);
    await waitFor(
      'revision 1 pruned',
      async () =>
        (await client.list(ControllerRevisionType, { namespace: NS })).items
          .map((r) => r.metadata!.name)
          .join() === `${NAME}-2`,
      30_000,
    );

    // Opportunistic: switching strategy is generation 3; the memory edit (generation 4)
    // reaches the VMs, and the running VMIs stay as they are.
    await edit((p) => {
      p.spec.updateStrategy = { opportunistic: {} };
    });
    await edit((p) => {
      p.spec.virtualMachineTemplate.spec!.template.spec!.domain.memory = { guest: '384Mi' };
    });
    await waitFor(
      'VMs on revision 4',
      async () => {
        const list = await vms();
        return (
          list.length === 2 && list.every((v) => v.metadata!.labels![POOL_REVISION_LABEL] === `${NAME}-4`)
        );
      },
      30_000,
    );
    const third = await vmis();
    expect(uids(third).sort()).toEqual(uids(second).sort());
    for (const v of third) expect(v.spec.domain.memory!.guest).toBe('256Mi');
    for (const v of await vms()) expect(v.spec.template.spec!.domain.memory!.guest).toBe('384Mi');
    expect(errors.filter((e) => e.startsWith('pool'))).toEqual([]);
  }, 120_000);
});
