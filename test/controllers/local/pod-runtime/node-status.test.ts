import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeStatusKeeper } from '../../../../src/controllers/local/pod-runtime/node-status';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { ConflictError } from '../../../../src/controllers/runtime/errors';
import { NodeType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../../../src/controllers/runtime/types';

type NodeObj = KubeObject & { spec?: { taints?: Array<{ key: string; effect: string }> } };
const NOT_READY = { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' };

describe('NodeStatusKeeper', () => {
  let store: EmbeddedStore;
  let root: string;
  beforeEach(async () => {
    store = await EmbeddedStore.open();
    root = mkdtempSync(join(tmpdir(), 'kvts-node-status-'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** The store, with `before` run ahead of the first `n` Node updates (another writer's turn). */
  const racing = (n: number, before: () => Promise<unknown>): ObjectClient => {
    let left = n;
    return new Proxy(store, {
      get(target, prop, receiver) {
        if (prop !== 'update') return Reflect.get(target, prop, receiver);
        return async (type: ResourceType, obj: KubeObject) => {
          if (type === NodeType && left-- > 0) await before();
          return target.update(type, obj);
        };
      },
    });
  };
  const labelNode = (v: string) =>
    store.patch(NodeType, 'n1', { metadata: { labels: { other: v } } }, { type: 'merge' });

  it('clears the not-ready taint when another writer changed the Node meanwhile, keeping its change', async () => {
    await store.create(NodeType, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { taints: [NOT_READY, { key: 'keep', effect: 'NoSchedule' }] },
    } as KubeObject);
    let turn = 0;
    const keeper = new NodeStatusKeeper({
      client: racing(2, () => labelNode(`w${++turn}`)),
      nodeName: 'n1',
      root,
    });
    await keeper.clearNotReadyTaint();
    const node = await store.get<NodeObj>(NodeType, 'n1');
    expect(node.spec?.taints).toEqual([{ key: 'keep', effect: 'NoSchedule' }]);
    expect(node.metadata?.labels?.other).toBe('w2');
  });

  it('gives up with the conflict after five attempts', async () => {
    await store.create(NodeType, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { taints: [NOT_READY] },
    } as KubeObject);
    let turn = 0;
    const keeper = new NodeStatusKeeper({
      client: racing(5, () => labelNode(`w${++turn}`)),
      nodeName: 'n1',
      root,
    });
    await expect(keeper.clearNotReadyTaint()).rejects.toBeInstanceOf(ConflictError);
    expect(turn).toBe(5);
    expect((await store.get<NodeObj>(NodeType, 'n1')).spec?.taints).toEqual([NOT_READY]);
  });
});
