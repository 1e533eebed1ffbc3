/**
 * The embedded store's watches indexed by their selector's equality (watcher-index.ts): a
 * watch by label `node=<n>` or field `data.node=<n>` still sees an object entering and
 * leaving its selector (ADDED, DELETED), a watch by an equality on another value sees
 * nothing, and an unindexed watch sees everything; the REST server's watches likewise.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  EmbeddedStore,
  KubeClient,
  type KubeObject,
  serveEmbeddedStore,
  type WatchEvent,
} from '../../../../src/controllers/runtime';
import { WatcherIndex } from '../../../../src/controllers/runtime/embedded/watcher-index';
import type { ObjectClient } from '../../../../src/controllers/runtime/types';
import { eventually } from '../contract';

const ns = 'default';

/** Moves configmap `cm` from no node to n1 (label and data), then to n2, then deletes it. */
async function moves(c: ObjectClient): Promise<void> {
  await c.create(ConfigMapType, { metadata: { name: 'cm', namespace: ns }, data: {} });
  for (const node of ['n1', 'n2']) {
    await c.patch(
      ConfigMapType,
      'cm',
      { metadata: { labels: { node } }, data: { node } },
      { namespace: ns, type: 'merge' },
    );
  }
  await c.delete(ConfigMapType, 'cm', { namespace: ns });
}

async function watchAll(c: ObjectClient): Promise<Record<string, string[]>> {
  const selectors: Record<string, { labelSelector?: string; fieldSelector?: string }> = {
    'label n1': { labelSelector: 'node=n1' },
    'label n2': { labelSelector: 'node=n2' },
    'label n3': { labelSelector: 'node=n3' },
    'field n1': { fieldSelector: 'data.node=n1' },
    'field n2, label exists': { fieldSelector: 'data.node=n2', labelSelector: 'node' },
    'field not n1': { fieldSelector: 'data.node!=n1' },
    all: {},
  };
  const seen: Record<string, string[]> = {};
  const rv = (await c.list(ConfigMapType, { namespace: ns })).metadata.resourceVersion;
  const handles = await Promise.all(
    Object.entries(selectors).map(([name, sel]) => {
      seen[name] = [];
      return c.watch(ConfigMapType, { namespace: ns, resourceVersion: rv, ...sel }, (e: WatchEvent) => {
        if (e.object.metadata?.name === 'cm') seen[name].push(e.type);
      });
    }),
  );
  await moves(c);
  await eventually('the unindexed watch sees the delete', async () => seen.all.length === 4);
  // Whatever else was due has come by the time the unindexed watch saw the delete.
  await new Promise((r) => setTimeout(r, 50));
  for (const h of handles) h.stop();
  return seen;
}

const expected = {
  'label n1': ['ADDED', 'DELETED'],
  'label n2': ['ADDED', 'DELETED'],
  'label n3': [],
  'field n1': ['ADDED', 'DELETED'],
  'field n2, label exists': ['ADDED', 'DELETED'],
  'field not n1': ['ADDED', 'DELETED', 'ADDED', 'DELETED'],
  all: ['ADDED', 'MODIFIED', 'MODIFIED', 'DELETED'],
};

describe('embedded store: watches indexed by selector equality', () => {
  it('in process: each watch sees exactly its selector transitions', async () => {
    const store = await EmbeddedStore.open();
    try {
      expect(await watchAll(store)).toEqual(expected);
    } finally {
      await store.close();
    }
  });

  it('over the REST server: the same', async () => {
    const store = await EmbeddedStore.open();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-widx-'));
    const server = await serveEmbeddedStore(store, path.join(dir, 's.sock'));
    const client = KubeClient.fromSocket(path.join(dir, 's.sock'));
    try {
      expect(await watchAll(client)).toEqual(expected);
    } finally {
      client.close();
      await server.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('candidates: a watch is offered once even when its value is in old and new; gone after delete', () => {
    const idx = new WatcherIndex<{ kind: string; label?: { key: string; value: string }; id: string }>();
    const a = { kind: 'k', label: { key: 'node', value: 'n1' }, id: 'a' };
    const b = { kind: 'k', id: 'b' };
    idx.add(a);
    idx.add(b);
    const obj = (node?: string): KubeObject => ({ metadata: { labels: node ? { node } : {} } });
    expect(idx.candidates('k', obj('n1'), obj('n1')).map((w) => w.id)).toEqual(['b', 'a']);
    expect(idx.candidates('k', obj('n2'), obj('n1')).map((w) => w.id)).toEqual(['b', 'a']);
    expect(idx.candidates('k', obj('n2')).map((w) => w.id)).toEqual(['b']);
    expect(idx.candidates('other', obj('n1'))).toEqual([]);
    idx.delete(a);
    expect(idx.candidates('k', obj('n1')).map((w) => w.id)).toEqual(['b']);
  });
});
