import { afterEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachinePool,
  VirtualMachinePoolSpec,
} from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { ControllerRevisionType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { VirtualMachinePoolType } from '../../../../src/controllers/virt-controller/pool/controller';
import { POOL_REVISION_LABEL } from '../../../../src/controllers/virt-controller/pool/vm-template';
import { fixture } from '../../../support/fixtures';
import type { NodeSimulatorOptions } from '../../../support/node-simulator';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const NAME = 'vmpool-containerdisk';

/** The pool fixture, in the default namespace, with `spec` merged over its spec. */
function examplePool(spec: Partial<VirtualMachinePoolSpec> = {}): VirtualMachinePool {
  const pool = fixture<VirtualMachinePool>('vmpool-containerdisk.yaml');
  return { ...pool, metadata: { ...pool.metadata, namespace: 'default' }, spec: { ...pool.spec, ...spec } };
}

const vmiReady = (v: VirtualMachineInstance) =>
  !v.metadata?.deletionTimestamp &&
  v.status?.phase === 'Running' &&
  (v.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

describe('VirtualMachinePool controller on the embedded store (the vmpool-containerdisk fixture)', () => {
  let h: Harness;
  const start = async (sim?: NodeSimulatorOptions) => {
    h = await startHarness({ pools: true, types: [VirtualMachinePoolType], sim });
  };
  afterEach(async () => {
    await h?.stop();
  });

  const getPool = () => h.store.get<VirtualMachinePool & KubeObject>(VirtualMachinePoolType, NAME, 'default');
  const vms = async () =>
    (
      await h.store.list<VirtualMachine & KubeObject>(VirtualMachineType, { namespace: 'default' })
    ).items.filter((v) => !v.metadata?.deletionTimestamp);
  const vmis = async () =>
    (await h.store.list<VirtualMachineInstance & KubeObject>(VmiResource, { namespace: 'default' })).items;
  const readyPool = (n: number) =>
    waitFor(`${n} ready`, async () => (await getPool()).status?.readyReplicas === n);
  /** Changes the template's guest memory: a VMI template change. */
  const editTemplate = async (guest: string) => {
    const next = structuredClone(await getPool());
    next.spec.virtualMachineTemplate.spec!.template.spec!.domain.memory = { guest };
    await h.store.update(VirtualMachinePoolType, next as KubeObject);
  };

  it('creates indexed VMs on the pool revision that run, and scales in by the selection policy', async () => {
    await start();
    const policy = { selectionPolicy: { sortPolicy: 'DescendingOrder' } };
    await h.store.create(
      VirtualMachinePoolType,
      examplePool({ scaleInStrategy: { proactive: policy } }) as KubeObject,
    );
    await readyPool(3);
    expect((await getPool()).status).toMatchObject({
      replicas: 3,
      labelSelector: `kubevirt.io/vmpool=${NAME}`,
    });
    expect((await vms()).map((v) => v.metadata!.name).sort()).toEqual([
      `${NAME}-0`,
      `${NAME}-1`,
      `${NAME}-2`,
    ]);
    for (const v of await vms()) {
      expect(v.metadata!.ownerReferences![0]).toMatchObject({
        kind: 'VirtualMachinePool',
        name: NAME,
        controller: true,
      });
      expect(v.metadata!.labels![POOL_REVISION_LABEL]).toBe(`${NAME}-1`);
      expect(v.status!.printableStatus).toBe('Running');
    }
    for (const vmi of await vmis()) expect(vmi.metadata!.labels![POOL_REVISION_LABEL]).toBe(`${NAME}-1`);
    const rev = await h.store.get<KubeObject & { data?: VirtualMachinePoolSpec }>(
      ControllerRevisionType,
      `${NAME}-1`,
      'default',
    );
    expect(rev.data!.virtualMachineTemplate.spec!.template.spec!.domain.memory!.guest).toBe('128Mi');

    const cur = await getPool();
    await h.store.update(VirtualMachinePoolType, {
      ...cur,
      spec: { ...cur.spec, replicas: 1 },
    } as KubeObject);
    await waitFor(
      '1 left',
      async () => (await vms()).length === 1 && (await getPool()).status?.replicas === 1,
    );
    // DescendingOrder removes the highest indices first.
    expect((await vms()).map((v) => v.metadata!.name)).toEqual([`${NAME}-0`]);
  });

  it('Opportunistic: a template change updates the VMs and waits for their next restart', async () => {
    await start();
    await h.store.create(
      VirtualMachinePoolType,
      examplePool({ replicas: 2, updateStrategy: { opportunistic: {} } }) as KubeObject,
    );
    await readyPool(2);
    const before = new Map((await vmis()).map((v) => [v.metadata!.name, v.metadata!.uid]));
    await editTemplate('256Mi');
    const updated = await waitFor('VMs on revision 2, asking for a restart', async () => {
      const list = await vms();
      const done = list.every(
        (v) =>
          v.metadata!.labels![POOL_REVISION_LABEL] === `${NAME}-2` &&
          v.status?.conditions?.some((c) => c.type === 'RestartRequired'),
      );
      return done && list.length === 2 ? list : undefined;
    });
    for (const v of updated) expect(v.spec.template.spec!.domain.memory!.guest).toBe('256Mi');
    // The running VMIs are the same ones, still on revision 1 with the old memory.
    const after = await vmis();
    expect(new Map(after.map((v) => [v.metadata!.name, v.metadata!.uid]))).toEqual(before);
    for (const v of after) {
      expect(v.metadata!.labels![POOL_REVISION_LABEL]).toBe(`${NAME}-1`);
      expect(v.spec.domain.memory!.guest).toBe('128Mi');
    }
    // Revision 1 is kept while a VMI still runs from it.
    await h.store.get(ControllerRevisionType, `${NAME}-1`, 'default');
  });

  it('Proactive: a template change restarts the VMIs in selection order, one unavailable at a time', async () => {
    await start();
    const updateStrategy = { proactive: { selectionPolicy: { sortPolicy: 'AscendingOrder' } } };
    await h.store.create(
      VirtualMachinePoolType,
      examplePool({ maxUnavailable: 1, updateStrategy }) as KubeObject,
    );
    await readyPool(3);
    const log: string[] = [];
    const seen = new Set<string>();
    const watch = await h.store.watch<VirtualMachineInstance & KubeObject>(
      VmiResource,
      { namespace: 'default' },
      (e) => {
        const v = e.object;
        const idx = v.metadata!.name!.slice(NAME.length + 1);
        const rev = v.metadata?.labels?.[POOL_REVISION_LABEL];
        const ev =
          rev === `${NAME}-1` && (e.type === 'DELETED' || v.metadata?.deletionTimestamp)
            ? `restart ${idx}`
            : rev === `${NAME}-2` && vmiReady(v)
              ? `ready ${idx}`
              : undefined;
        if (ev && !seen.has(ev)) {
          seen.add(ev);
          log.push(ev);
        }
      },
    );
    try {
      await editTemplate('256Mi');
      const done = await waitFor(
        'all VMIs on revision 2 and ready',
        async () => {
          const list = await vmis();
          const ok =
            list.length === 3 &&
            list.every((v) => v.metadata!.labels![POOL_REVISION_LABEL] === `${NAME}-2` && vmiReady(v));
          return ok ? list : undefined;
        },
        20_000,
      );
      for (const v of done) expect(v.spec.domain.memory!.guest).toBe('256Mi');
      // maxUnavailable 1: the next VMI restarts only once the previous one is back and Ready.
      expect(log).toEqual(['restart 0', 'ready 0', 'restart 1', 'ready 1', 'restart 2', 'ready 2']);
      // The rollout finished: revision 1 is pruned.
      await waitFor('revision 1 pruned', async () => {
        const revs = await h.store.list(ControllerRevisionType, { namespace: 'default' });
        return revs.items.map((r) => r.metadata!.name).join() === `${NAME}-2`;
      });
    } finally {
      watch.stop();
    }
  });

  it('Unmanaged: a template change leaves the VMs alone', async () => {
    await start();
    await h.store.create(
      VirtualMachinePoolType,
      examplePool({ replicas: 1, updateStrategy: { unmanaged: {} } }) as KubeObject,
    );
    await readyPool(1);
    await editTemplate('256Mi');
    await waitFor('pool generation 2 seen', async () => (await getPool()).metadata?.generation === 2);
    // A scale-out after the edit proves the controller has reconciled the new generation.
    const cur = await getPool();
    await h.store.update(VirtualMachinePoolType, {
      ...cur,
      spec: { ...cur.spec, replicas: 2 },
    } as KubeObject);
    await readyPool(2);
    const byName = new Map((await vms()).map((v) => [v.metadata!.name, v]));
    expect(byName.get(`${NAME}-0`)!.spec.template.spec!.domain.memory!.guest).toBe('128Mi');
    expect(byName.get(`${NAME}-0`)!.metadata!.labels![POOL_REVISION_LABEL]).toBe(`${NAME}-1`);
    expect(byName.get(`${NAME}-1`)!.spec.template.spec!.domain.memory!.guest).toBe('256Mi');
  });

  it('autohealing replaces a VM whose VMIs fail to start', async () => {
    let doomed: string | undefined;
    await start({
      failGuest: (vmi) => {
        const owner = vmi.metadata?.ownerReferences?.[0]?.uid;
        doomed ??= owner;
        return owner === doomed;
      },
    });
    await h.store.create(
      VirtualMachinePoolType,
      examplePool({ replicas: 2, autohealing: { startUpFailureThreshold: 1 } }) as KubeObject,
    );
    const healed = await waitFor('2 ready VMs, none the failing one', async () => {
      const list = await vms();
      const ok =
        doomed && list.length === 2 && list.every((v) => v.metadata!.uid !== doomed && v.status?.ready);
      return ok ? list : undefined;
    });
    expect(healed.map((v) => v.metadata!.name).sort()).toEqual([`${NAME}-0`, `${NAME}-1`]);
    await readyPool(2);
    expect(h.errors).toEqual([]);
  });

  it('without autohealing, a VM whose VMI failed to start stays, counting its failures', async () => {
    await start({ failGuest: () => true });
    await h.store.create(VirtualMachinePoolType, examplePool({ replicas: 1 }) as KubeObject);
    const vm = await waitFor('a start failure', async () => {
      const v = (await vms())[0];
      return (v?.status?.startFailure?.consecutiveFailCount ?? 0) >= 1 ? v : undefined;
    });
    // A scale-out the controller acts on after the failure: the failing VM is still there.
    const cur = await getPool();
    await h.store.update(VirtualMachinePoolType, {
      ...cur,
      spec: { ...cur.spec, replicas: 2 },
    } as KubeObject);
    await waitFor('2 VMs', async () => (await getPool()).status?.replicas === 2);
    expect((await vms()).map((v) => v.metadata!.uid)).toContain(vm.metadata!.uid);
  });
  it("waits, with ReplicaFailure, while a revision of its name is another owner's", async () => {
    await start();
    const stale = {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: {
        name: `${NAME}-1`,
        namespace: 'default',
        ownerReferences: [
          {
            apiVersion: 'pool.kubevirt.io/v1beta1',
            kind: 'VirtualMachinePool',
            name: NAME,
            uid: 'old-uid',
            controller: true,
          },
        ],
      },
      data: {},
      revision: 1,
    };
    await h.store.create(ControllerRevisionType, stale as KubeObject);
    await h.store.create(VirtualMachinePoolType, examplePool({ replicas: 1 }) as KubeObject);
    const cond = await waitFor('ReplicaFailure', async () =>
      (await getPool()).status?.conditions?.find((c) => c.type === 'ReplicaFailure'),
    );
    expect(cond).toMatchObject({
      reason: 'FailedScaleOut',
      message: `ControllerRevision default/${NAME}-1 exists and is not this pool's`,
    });
    expect(await vms()).toEqual([]);
    await h.store.delete(ControllerRevisionType, `${NAME}-1`, { namespace: 'default' });
    // Revisions are not watched (the pool retries in 5 s); a pool edit wakes it now.
    const cur = await getPool();
    await h.store.update(VirtualMachinePoolType, {
      ...cur,
      metadata: { ...cur.metadata, annotations: { poke: '1' } },
    } as KubeObject);
    await readyPool(1);
    expect((await getPool()).status?.conditions ?? []).not.toContainEqual(
      expect.objectContaining({ type: 'ReplicaFailure' }),
    );
  });
  it('paused: no VMs and the ReplicaPaused condition, until resumed', async () => {
    await start();
    await h.store.create(VirtualMachinePoolType, examplePool({ replicas: 1, paused: true }) as KubeObject);
    const cond = await waitFor('ReplicaPaused', async () =>
      (await getPool()).status?.conditions?.find((c) => c.type === 'ReplicaPaused'),
    );
    expect(cond).toMatchObject({
      status: 'True',
      reason: 'SuccessfulPaused',
      message: 'Pool controller is paused',
    });
    expect(await vms()).toEqual([]);
    const cur = await getPool();
    await h.store.update(VirtualMachinePoolType, {
      ...cur,
      spec: { ...cur.spec, paused: false },
    } as KubeObject);
    await readyPool(1);
    expect((await getPool()).status?.conditions ?? []).toEqual([]);
  });
});
