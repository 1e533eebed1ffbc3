/**
 * The node controller's decisions (upstream's node_test.go cases): when a node counts as
 * unresponsive, which of its VMIs fail, what is patched, and when it looks again.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import type { ObjectClient } from '../../../../src/controllers/runtime/types';
import {
  NODE_UNRESPONSIVE_REASON,
  NodeController,
  type NodeObject,
  nodeUnresponsive,
  podAlive,
} from '../../../../src/controllers/virt-controller/node/controller';

const NOW = new Date('2026-12-04T12:00:00Z');
const ago = (s: number) => new Date(NOW.getTime() - s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

const node = (beat: string | undefined, schedulable = 'true'): NodeObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'b',
    uid: 'node-uid',
    labels: { 'kubevirt.io/schedulable': schedulable },
    annotations: beat ? { 'kubevirt.io/heartbeat': beat } : {},
  },
});
const vmi = (name: string): VirtualMachineInstance =>
  ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: { domain: { devices: {} } },
    status: { phase: 'Running', nodeName: 'b' },
  }) as VirtualMachineInstance;
const pod = (vmiName: string, status: Pod['status']): Pod =>
  ({
    metadata: {
      name: `virt-launcher-${vmiName}`,
      namespace: 'ns',
      ownerReferences: [
        {
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachineInstance',
          name: vmiName,
          uid: `uid-${vmiName}`,
          controller: true,
        },
      ],
    },
    spec: { nodeName: 'b', containers: [] },
    status,
  }) as unknown as Pod;

function harness(n: NodeObject | undefined, vmis: VirtualMachineInstance[], pods: Pod[]) {
  const patches: Array<{ kind: string; name: string; patch: unknown; type: string }> = [];
  const events: string[] = [];
  const client = {
    patch: async (type: { kind: string }, name: string, patch: unknown, o: { type: string }) => {
      patches.push({ kind: type.kind, name, patch, type: o.type });
      return {};
    },
  } as unknown as ObjectClient;
  const c = new NodeController({
    client,
    recorder: { event: (o, _t, reason, msg) => events.push(`${o.kind} ${reason}: ${msg}`) },
    nodes: { get: (k) => (k === 'b' ? n : undefined), list: () => (n ? [n] : []) },
    vmisOnNode: () => vmis,
    podsOnNode: () => pods,
    heartbeatTimeoutMs: 30_000,
    now: () => NOW,
  });
  return { c, patches, events };
}

describe('node controller', () => {
  it('a node is unresponsive once its heartbeat is older than the timeout, or when it is gone', () => {
    expect(nodeUnresponsive(node(ago(10)), NOW, 30_000)).toBe(false);
    expect(nodeUnresponsive(node(ago(31)), NOW, 30_000)).toBe(true);
    expect(nodeUnresponsive(undefined, NOW, 30_000)).toBe(true);
    // No handler ever ran there; an unreadable stamp is left alone as upstream does.
    expect(nodeUnresponsive(node(undefined), NOW, 30_000)).toBe(false);
    expect(nodeUnresponsive(node('yesterday'), NOW, 30_000)).toBe(false);
  });

  it('a pod counts as alive unless Failed, Succeeded or with every container terminated', () => {
    expect(podAlive(pod('a', { phase: 'Running' }))).toBe(true);
    expect(podAlive(pod('a', { phase: 'Pending' }))).toBe(true);
    expect(podAlive(pod('a', { phase: 'Failed' }))).toBe(false);
    expect(podAlive(pod('a', { phase: 'Succeeded' }))).toBe(false);
    const terminated = { state: { terminated: { exitCode: 1 } } };
    expect(
      podAlive(pod('a', { phase: 'Running', containerStatuses: [terminated, terminated] } as never)),
    ).toBe(false);
    expect(
      podAlive(
        pod('a', { phase: 'Running', containerStatuses: [terminated, { state: { running: {} } }] } as never),
      ),
    ).toBe(true);
  });

  it('a responsive node: nothing written, looked at again when its heartbeat would expire', async () => {
    const { c, patches } = harness(node(ago(10)), [vmi('a')], []);
    expect(await c.reconcile('b')).toEqual({ requeueAfterMs: 21_000 });
    expect(patches).toEqual([]);
  });

  it('an unresponsive node: marked unschedulable, its VMIs without a live pod failed, the others left', async () => {
    const { c, patches, events } = harness(
      node(ago(60)),
      [vmi('gone'), vmi('dead-pod'), vmi('running')],
      [pod('dead-pod', { phase: 'Failed' }), pod('running', { phase: 'Running' })],
    );
    expect(await c.reconcile('b')).toEqual({ requeueAfterMs: 30_000 });
    expect(patches[0]).toEqual({
      kind: 'Node',
      name: 'b',
      type: 'merge',
      patch: { metadata: { labels: { 'kubevirt.io/schedulable': 'false' } } },
    });
    expect(patches.slice(1).map((p) => p.name)).toEqual(['gone', 'dead-pod']);
    expect(patches[1]).toMatchObject({ kind: 'VirtualMachineInstance', type: 'json' });
    expect(patches[1].patch).toEqual([
      { op: 'test', path: '/status/nodeName', value: 'b' },
      { op: 'replace', path: '/status/phase', value: 'Failed' },
      { op: 'add', path: '/status/reason', value: NODE_UNRESPONSIVE_REASON },
    ]);
    expect(events).toEqual([
      'Node NodeUnresponsive: virt-handler is not responsive, marking node as unresponsive',
      'VirtualMachineInstance NodeUnresponsive: virt-handler on node b is not responsive, marking VMI as failed',
      'VirtualMachineInstance NodeUnresponsive: virt-handler on node b is not responsive, marking VMI as failed',
    ]);
  });

  it('an already unschedulable node is not patched again; a deleted node fails its VMIs and is not requeued', async () => {
    const marked = harness(node(ago(60), 'false'), [], []);
    await marked.c.reconcile('b');
    expect(marked.patches).toEqual([]);
    const deleted = harness(undefined, [vmi('a')], []);
    expect(await deleted.c.reconcile('b')).toBeUndefined();
    expect(deleted.patches.map((p) => `${p.kind} ${p.name}`)).toEqual(['VirtualMachineInstance a']);
  });
});
