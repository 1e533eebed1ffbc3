import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { VirtualMachine, VirtualMachinePool } from '../../../../src/api/generated/types';
import { VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { VirtualMachinePoolType } from '../../../../src/controllers/virt-controller/pool/controller';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const repoRoot = path.resolve(__dirname, '../../../..');
const examples = path.join(path.resolve(repoRoot, '../shared/kubevirt'), 'examples');

/** Upstream's pool example, in the default namespace. */
function examplePool(): VirtualMachinePool {
  const pool = parse(readFileSync(path.join(examples, 'vm-pool-cirros.yaml'), 'utf8')) as VirtualMachinePool;
  pool.metadata = { ...pool.metadata, namespace: 'default' };
  return pool;
}

describe('VirtualMachinePool controller on the embedded store (upstream vm-pool-cirros example)', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness({ pools: true, types: [VirtualMachinePoolType] });
  });
  afterEach(async () => {
    await h.stop();
  });

  const getPool = () =>
    h.store.get<VirtualMachinePool & KubeObject>(VirtualMachinePoolType, 'vm-pool-cirros', 'default');
  const vms = async () =>
    (
      await h.store.list<VirtualMachine & KubeObject>(VirtualMachineType, { namespace: 'default' })
    ).items.filter((v) => !v.metadata?.deletionTimestamp);

  it('creates indexed VMs that run, and scales down from the highest index', async () => {
    await h.store.create(VirtualMachinePoolType, examplePool() as KubeObject);
    const st = await waitFor('3 ready', async () => {
      const p = await getPool();
      return p.status?.readyReplicas === 3 ? p.status : undefined;
    });
    expect(st).toMatchObject({
      replicas: 3,
      readyReplicas: 3,
      labelSelector: 'kubevirt.io/vmpool=vm-pool-cirros',
    });
    const names = (await vms()).map((v) => v.metadata!.name).sort();
    expect(names).toEqual(['vm-pool-cirros-0', 'vm-pool-cirros-1', 'vm-pool-cirros-2']);
    for (const v of await vms()) {
      expect(v.metadata!.ownerReferences![0]).toMatchObject({
        kind: 'VirtualMachinePool',
        name: 'vm-pool-cirros',
        controller: true,
      });
      expect(v.status!.printableStatus).toBe('Running');
    }
    const cur = await getPool();
    await h.store.update(VirtualMachinePoolType, {
      ...cur,
      spec: { ...cur.spec, replicas: 1 },
    } as KubeObject);
    await waitFor(
      '1 left',
      async () => (await vms()).length === 1 && (await getPool()).status?.replicas === 1,
    );
    expect((await vms()).map((v) => v.metadata!.name)).toEqual(['vm-pool-cirros-0']);
  });

  it('pushes a template change into its VMs, which then ask for a restart', async () => {
    await h.store.create(VirtualMachinePoolType, {
      ...examplePool(),
      spec: { ...examplePool().spec, replicas: 1 },
    } as KubeObject);
    await waitFor('ready', async () => (await getPool()).status?.readyReplicas === 1);
    const cur = await getPool();
    const next = structuredClone(cur);
    next.spec.virtualMachineTemplate.spec!.template.spec!.domain.memory = { guest: '256Mi' };
    await h.store.update(VirtualMachinePoolType, next as KubeObject);
    const vm = await waitFor('RestartRequired', async () => {
      const v = (await vms())[0];
      return v.status?.conditions?.some((c) => c.type === 'RestartRequired') ? v : undefined;
    });
    expect(vm.spec.template.spec!.domain.memory!.guest).toBe('256Mi');
  });
});
