/**
 * `virtctl evacuate-cancel vmi|vm NAME` against virt-api (upstream's evacuate_cancel.go):
 * `PUT .../{virtualmachineinstances|virtualmachines}/NAME/evacuate/cancel` with
 * EvacuateCancelOptions removes `status.evacuationNodeName` when it still names the given
 * node, honours dryRun, answers 200 with nothing to cancel, and refuses (400) while the
 * node has the drain taint.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { startVirtApiHarness, type VirtApiHarness, VirtualMachineInstanceType } from './virt-api-harness';
import { vmObjects } from './vm-objects';

const NS = 'ns1';
const base = `/apis/subresources.kubevirt.io/v1/namespaces/${NS}`;
let h: VirtApiHarness;
const { vm, vmi } = vmObjects(() => h, NS);

const evac = (node: string) => ({ phase: 'Running', nodeName: node, evacuationNodeName: node });
const status = async (name: string) =>
  (
    await h.store.get<KubeObject & { status?: { evacuationNodeName?: string } }>(
      VirtualMachineInstanceType,
      name,
      NS,
    )
  ).status;

beforeAll(async () => {
  h = await startVirtApiHarness();
  for (const [name, taints] of [
    ['node1', []],
    ['tainted', [{ key: 'kubevirt.io/drain', value: 'draining', effect: 'NoSchedule' }]],
  ] as const)
    await h.store.create(NodeType, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name },
      spec: { taints },
    } as KubeObject);
  await vmi('a', evac('node1'));
  await vmi('dry', evac('node1'));
  await vmi('calm', { phase: 'Running', nodeName: 'node1' });
  await vmi('stuck', evac('tainted'));
  await vm('vm1', 'Always', { created: true });
  await vmi('vm1', evac('node1'));
});
afterAll(async () => {
  await h?.close();
});

describe('evacuate/cancel', () => {
  it('removes the VMI evacuation mark naming the node', async () => {
    const r = await h.call('PUT', `${base}/virtualmachineinstances/a/evacuate/cancel`, {
      evacuationNodeName: 'node1',
    });
    expect(r.code).toBe(200);
    expect((await status('a'))?.evacuationNodeName).toBeUndefined();
  });

  it('for a VM: its VMI', async () => {
    const r = await h.call('PUT', `${base}/virtualmachines/vm1/evacuate/cancel`, {
      evacuationNodeName: 'node1',
    });
    expect(r.code).toBe(200);
    expect((await status('vm1'))?.evacuationNodeName).toBeUndefined();
  });

  it('dryRun changes nothing; a stale node name is refused by the test and changes nothing', async () => {
    const dry = await h.call('PUT', `${base}/virtualmachineinstances/dry/evacuate/cancel`, {
      evacuationNodeName: 'node1',
      dryRun: ['All'],
    });
    expect(dry.code).toBe(200);
    expect((await status('dry'))?.evacuationNodeName).toBe('node1');
    const stale = await h.call('PUT', `${base}/virtualmachineinstances/dry/evacuate/cancel`, {
      evacuationNodeName: 'node0',
    });
    expect(stale.code).toBe(500);
    expect(String(stale.body.message)).toContain('cancelling the evacuation of dry');
    expect((await status('dry'))?.evacuationNodeName).toBe('node1');
    const none = await h.call('PUT', `${base}/virtualmachineinstances/dry/evacuate/cancel`, {});
    expect(none.code).toBe(400);
    expect(none.body.message).toBe('evacuationNodeName: required (the node the VMI is evacuated from)');
  });

  it('answers 200 when nothing is being evacuated', async () => {
    const r = await h.call('PUT', `${base}/virtualmachineinstances/calm/evacuate/cancel`, {
      evacuationNodeName: 'node1',
    });
    expect(r.code).toBe(200);
  });

  it("refuses while the node has the drain taint (upstream's message)", async () => {
    const r = await h.call('PUT', `${base}/virtualmachineinstances/stuck/evacuate/cancel`, {
      evacuationNodeName: 'tainted',
    });
    expect(r.code).toBe(400);
    expect(r.body.message).toBe(
      'Node "tainted" has NodeDrainTaintKey "kubevirt.io/drain=draining:NoSchedule"',
    );
    expect((await status('stuck'))?.evacuationNodeName).toBe('tainted');
  });

  it('needs PUT; a missing VMI is 404', async () => {
    expect((await h.call('GET', `${base}/virtualmachineinstances/a/evacuate/cancel`)).code).toBe(405);
    expect((await h.call('PUT', `${base}/virtualmachineinstances/nope/evacuate/cancel`, {})).code).toBe(404);
  });
});
