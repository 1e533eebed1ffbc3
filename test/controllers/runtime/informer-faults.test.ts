/**
 * Fault tests on the embedded store served over its socket: the server goes away while
 * informers watch through KubeClient, objects change meanwhile, the watch history is
 * compacted, the store restarts from disk; the informer caches must converge with no
 * missed update. (The same against a real kube-apiserver lives in kube-faults.test.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  type EmbeddedServer,
  EmbeddedStore,
  Informer,
  KubeClient,
  type KubeObject,
  serveEmbeddedStore,
} from '../../../src/controllers/runtime';
import { eventually } from './contract';

type CM = KubeObject & { data?: Record<string, string> };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The last value each handler saw per object: the cache must end equal to the store. */
function track(inf: Informer<CM>) {
  const seen = new Map<string, string | undefined>();
  inf.addEventHandler({
    onAdd: (o) => seen.set(o.metadata!.name!, o.data?.v),
    onUpdate: (_a, o) => seen.set(o.metadata!.name!, o.data?.v),
    onDelete: (o) => seen.delete(o.metadata!.name!),
  });
  return seen;
}

async function converged(store: EmbeddedStore, inf: Informer<CM>, seen: Map<string, string | undefined>) {
  const truth = (await store.list<CM>(ConfigMapType, { namespace: 'default' })).items;
  const want = Object.fromEntries(truth.map((o) => [o.metadata!.name!, o.data?.v]));
  return (
    JSON.stringify(Object.fromEntries([...seen].sort())) ===
      JSON.stringify(Object.fromEntries(Object.entries(want).sort())) &&
    inf.indexer.size === truth.length &&
    truth.every(
      (o) =>
        inf.indexer.getByName(o.metadata!.name!, 'default')?.metadata?.resourceVersion ===
        o.metadata?.resourceVersion,
    )
  );
}

describe('informer faults (embedded store behind its socket server)', () => {
  it('server gone, objects changed and history compacted meanwhile: relist on 410 converges', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-fault-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const store = await EmbeddedStore.open({ dir: path.join(dir, 'data') });
    cleanups.push(() => store.close());
    const sock = path.join(dir, 'api.sock');
    let server: EmbeddedServer = await serveEmbeddedStore(store, sock);
    cleanups.push(() => server.close());
    for (let i = 0; i < 10; i++)
      await store.create(ConfigMapType, {
        metadata: { name: `o${i}`, namespace: 'default' },
        data: { v: '0' },
      });
    const client = KubeClient.fromSocket(sock, { retries: 0 });
    cleanups.push(() => client.close());
    const inf = new Informer<CM>(client, ConfigMapType, {
      namespace: 'default',
      backoff: { initialMs: 20, maxMs: 200 },
      onError: () => {},
    });
    cleanups.push(() => inf.stop());
    const seen = track(inf);
    inf.start();
    await inf.waitForSync();
    await store.patch(ConfigMapType, 'o1', { data: { v: 'live' } }, { namespace: 'default', type: 'merge' });
    await eventually('live update seen', async () => seen.get('o1') === 'live');

    await server.close();
    await store.patch(
      ConfigMapType,
      'o2',
      { data: { v: 'while-down' } },
      { namespace: 'default', type: 'merge' },
    );
    await store.delete(ConfigMapType, 'o3', { namespace: 'default' });
    await store.create(ConfigMapType, { metadata: { name: 'new', namespace: 'default' }, data: { v: 'n' } });
    store.compactHistory();
    server = await serveEmbeddedStore(store, sock);

    await eventually('cache converges after relist', () => converged(store, inf, seen));
    expect(inf.stats.gone).toBeGreaterThanOrEqual(1);
    expect(seen.get('o2')).toBe('while-down');
    expect(seen.has('o3')).toBe(false);
    expect(seen.get('new')).toBe('n');
  });

  it('store restarted from disk while writers keep writing: no update is missed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-fault-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const data = path.join(dir, 'data');
    const sock = path.join(dir, 'api.sock');
    let store = await EmbeddedStore.open({ dir: data });
    let server = await serveEmbeddedStore(store, sock);
    cleanups.push(async () => {
      await server.close();
      await store.close();
    });
    const writer = KubeClient.fromSocket(sock, { retries: 50, backoff: { initialMs: 10, maxMs: 100 } });
    const client = KubeClient.fromSocket(sock, { retries: 0 });
    cleanups.push(() => writer.close());
    cleanups.push(() => client.close());
    for (let i = 0; i < 5; i++)
      await writer.create(ConfigMapType, {
        metadata: { name: `w${i}`, namespace: 'default' },
        data: { v: '0' },
      });
    const inf = new Informer<CM>(client, ConfigMapType, {
      namespace: 'default',
      backoff: { initialMs: 20, maxMs: 200 },
      onError: () => {},
    });
    cleanups.push(() => inf.stop());
    const seen = track(inf);
    inf.start();
    await inf.waitForSync();

    const write = async (round: number) => {
      for (let i = 0; i < 5; i++) {
        await writer.patch(
          ConfigMapType,
          `w${i}`,
          { data: { v: String(round) } },
          { namespace: 'default', type: 'merge' },
        );
      }
    };
    await write(1);
    // Restart: the server and the store go away; writes issued meanwhile wait (retry with backoff).
    await server.close();
    await store.close();
    const pending = write(2);
    store = await EmbeddedStore.open({ dir: data });
    server = await serveEmbeddedStore(store, sock);
    await pending;
    await write(3);

    await eventually('cache converges after restart', () => converged(store, inf, seen));
    for (let i = 0; i < 5; i++) expect(seen.get(`w${i}`)).toBe('3');
    expect(inf.stats.watches).toBeGreaterThanOrEqual(2);
  });

  it('a watch ended by its timeout resumes from the last resourceVersion without relisting', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-fault-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const store = await EmbeddedStore.open();
    cleanups.push(() => store.close());
    const server = await serveEmbeddedStore(store, path.join(dir, 'api.sock'));
    cleanups.push(() => server.close());
    const client = KubeClient.fromSocket(server.socketPath);
    cleanups.push(() => client.close());
    const inf = new Informer<CM>(client, ConfigMapType, {
      namespace: 'default',
      watchTimeoutSeconds: 1,
      backoff: { initialMs: 10, maxMs: 50 },
    });
    cleanups.push(() => inf.stop());
    const seen = track(inf);
    inf.start();
    await inf.waitForSync();
    for (let i = 0; i < 3; i++) {
      await store.create(ConfigMapType, {
        metadata: { name: `t${i}`, namespace: 'default' },
        data: { v: String(i) },
      });
      const watches = inf.stats.watches;
      await eventually('the watch times out and is resumed', async () => inf.stats.watches > watches);
    }
    await eventually('cache converges', () => converged(store, inf, seen));
    expect(inf.stats.lists).toBe(1);
    expect(inf.stats.gone).toBe(0);
    expect([...seen.keys()].sort()).toEqual(['t0', 't1', 't2']);
  });
});
