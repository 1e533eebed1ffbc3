import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  EmbeddedStore,
  Informer,
  type KubeObject,
  type ObjectClient,
  SharedInformerFactory,
  type WatchHandle,
} from '../../../src/controllers/runtime';
import { eventually } from './contract';

type CM = KubeObject & { data?: Record<string, string> };
const cm = (name: string, v: string): CM => ({ metadata: { name, namespace: 'default' }, data: { v } });

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function memStore(): Promise<EmbeddedStore> {
  const s = await EmbeddedStore.open();
  cleanups.push(() => s.close());
  return s;
}

describe('Informer', () => {
  it('lists, then delivers add/update/delete in order and keeps the cache equal to the store', async () => {
    const store = await memStore();
    await store.create(ConfigMapType, cm('pre', '0'));
    const inf = new Informer<CM>(store, ConfigMapType, { namespace: 'default' });
    cleanups.push(() => inf.stop());
    const log: string[] = [];
    inf.addEventHandler({
      onAdd: (o) => log.push(`add ${o.metadata?.name}=${o.data?.v}`),
      onUpdate: (a, b) => log.push(`update ${b.metadata?.name} ${a.data?.v}->${b.data?.v}`),
      onDelete: (o) => log.push(`delete ${o.metadata?.name}`),
    });
    inf.start();
    await inf.waitForSync();
    expect(inf.hasSynced()).toBe(true);
    expect(log).toEqual(['add pre=0']);
    await store.create(ConfigMapType, cm('a', '1'));
    await store.patch(ConfigMapType, 'a', { data: { v: '2' } }, { namespace: 'default', type: 'merge' });
    await store.delete(ConfigMapType, 'pre', { namespace: 'default' });
    await eventually('events arrive', async () => log.length >= 4);
    expect(log).toEqual(['add pre=0', 'add a=1', 'update a 1->2', 'delete pre']);
    expect(inf.indexer.keys()).toEqual(['default/a']);
    expect(inf.resourceVersion).toBe(store.resourceVersion);
    const late: string[] = [];
    inf.addEventHandler({ onAdd: (o) => late.push(o.metadata!.name!) });
    expect(late).toEqual(['a']);
  });

  it('caches listed and watched objects without managedFields, leaving the objects it was given alone', async () => {
    const store = await memStore();
    await store.create(ConfigMapType, cm('listed', '0'));
    const managed = [{ manager: 'kubectl', operation: 'Apply' }];
    const given: KubeObject[] = [];
    const withManaged = <T extends KubeObject>(o: T): T => {
      const out = { ...o, metadata: { ...o.metadata, managedFields: managed } };
      given.push(out);
      return out;
    };
    // The server's answers as a real API server gives them: with managedFields.
    const client = Object.create(store) as ObjectClient;
    client.list = async (type, opts) => {
      const l = await store.list(type, opts);
      return { ...l, items: l.items.map(withManaged) } as never;
    };
    client.watch = (type, opts, onEvent) =>
      store.watch(type, opts, (ev) => onEvent({ ...ev, object: withManaged(ev.object) } as never));
    const inf = new Informer<CM>(client, ConfigMapType, { namespace: 'default' });
    cleanups.push(() => inf.stop());
    const seen: KubeObject[] = [];
    inf.addEventHandler({ onAdd: (o) => seen.push(o), onUpdate: (_, o) => seen.push(o) });
    inf.start();
    await inf.waitForSync();
    await store.create(ConfigMapType, cm('watched', '1'));
    await eventually('the watched object arrives', async () => seen.length >= 2);
    expect(seen.map((o) => o.metadata?.name)).toEqual(['listed', 'watched']);
    for (const o of [...seen, ...inf.indexer.list()]) expect(o.metadata).not.toHaveProperty('managedFields');
    expect(inf.indexer.get('default/watched')?.data).toEqual({ v: '1' });
    expect(given.length).toBeGreaterThanOrEqual(2);
    for (const o of given) expect(o.metadata?.managedFields).toBe(managed);
  });

  it('keeps managedFields when given a transform that does', async () => {
    const store = await memStore();
    await store.create(ConfigMapType, cm('a', '0'));
    const client = Object.create(store) as ObjectClient;
    client.list = async (type, opts) => {
      const l = await store.list(type, opts);
      return {
        ...l,
        items: l.items.map((o) => ({ ...o, metadata: { ...o.metadata, managedFields: [{}] } })),
      } as never;
    };
    const inf = new Informer<CM>(client, ConfigMapType, { namespace: 'default', transform: (o) => o });
    cleanups.push(() => inf.stop());
    inf.start();
    await inf.waitForSync();
    expect(inf.indexer.get('default/a')?.metadata?.managedFields).toEqual([{}]);
  });

  it('the shared factory gives one informer per kind and selector', async () => {
    const store = await memStore();
    const f = new SharedInformerFactory(store);
    cleanups.push(() => f.shutdown());
    const a = f.informerFor(ConfigMapType, { namespace: 'default' });
    expect(f.informerFor(ConfigMapType, { namespace: 'default' })).toBe(a);
    expect(f.informerFor(ConfigMapType, { namespace: 'other' })).not.toBe(a);
    f.start();
    await f.waitForCacheSync();
    expect(f.all().every((i) => i.hasSynced())).toBe(true);
  });

  it('never loops tightly: a watch that closes at once is retried after a growing backoff', async () => {
    const store = await memStore();
    let watches = 0;
    const waited: number[] = [];
    const flaky: ObjectClient = Object.create(store);
    flaky.list = store.list.bind(store);
    flaky.watch = async (): Promise<WatchHandle> => {
      watches++;
      waited.push(inf.stats.lastBackoffMs);
      return { stop() {}, closed: Promise.resolve(undefined) };
    };
    const inf = new Informer(flaky, ConfigMapType, { backoff: { initialMs: 5, maxMs: 80, jitter: 0 } });
    cleanups.push(() => inf.stop());
    inf.start();
    await eventually('seven immediate closes', async () => watches >= 7);
    // Before each re-watch the informer waited a backoff that doubled up to the cap.
    expect(waited.slice(0, 7)).toEqual([0, 5, 10, 20, 40, 80, 80]);
    expect(inf.stats.lists).toBe(1);
  });
});
