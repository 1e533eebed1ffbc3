/** Embedded-store behaviour beyond the shared contract: persistence, journal recovery, bookmarks, namespaces. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  EmbeddedStore,
  ForbiddenError,
  type KubeObject,
  NamespaceType,
  NotFoundError,
  type WatchEvent,
} from '../../../../src/controllers/runtime';
import { clearFinalizers, eventually } from '../contract';

const dirs: string[] = [];
const stores: EmbeddedStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-store-'));
  dirs.push(d);
  return d;
}
async function open(opts: Parameters<typeof EmbeddedStore.open>[0]): Promise<EmbeddedStore> {
  const s = await EmbeddedStore.open(opts);
  stores.push(s);
  return s;
}
const cm = (
  name: string,
  data: Record<string, string> = {},
  extra: Partial<KubeObject['metadata']> = {},
): KubeObject & {
  data: Record<string, string>;
} => ({ metadata: { name, namespace: 'default', ...extra }, data });

describe('EmbeddedStore persistence', () => {
  it('survives a restart: objects, uids, resourceVersion counter and deletions', async () => {
    const dir = tmp();
    const s1 = await EmbeddedStore.open({ dir });
    const a = await s1.create(ConfigMapType, cm('a', { k: '1' }));
    await s1.create(ConfigMapType, cm('b'));
    await s1.patch(ConfigMapType, 'a', { data: { k: '2' } }, { namespace: 'default', type: 'merge' });
    await s1.delete(ConfigMapType, 'b', { namespace: 'default' });
    const rv = s1.resourceVersion;
    await s1.close();

    const s2 = await open({ dir });
    expect(s2.resourceVersion).toBe(rv);
    const got = await s2.get<typeof a>(ConfigMapType, 'a', 'default');
    expect(got.data).toEqual({ k: '2' });
    expect(got.metadata?.uid).toBe(a.metadata?.uid);
    await expect(s2.get(ConfigMapType, 'b', 'default')).rejects.toBeInstanceOf(NotFoundError);
    const c = await s2.create(ConfigMapType, cm('c'));
    expect(Number(c.metadata?.resourceVersion)).toBe(Number(rv) + 1);
    // Watches from before the restart cannot be resumed: the history is gone.
    const h = await s2.watch(ConfigMapType, { namespace: 'default', resourceVersion: '1' }, () => {});
    expect((await h.closed)?.name).toBe('GoneError');
  });

  it('compacts the journal into a snapshot and recovers from both', async () => {
    const dir = tmp();
    const s1 = await EmbeddedStore.open({ dir, snapshotEvery: 10 });
    for (let i = 0; i < 25; i++) await s1.create(ConfigMapType, cm(`o${i}`, { i: String(i) }));
    await s1.close();
    expect(fs.existsSync(path.join(dir, 'snapshot.json'))).toBe(true);
    const lines = fs.readFileSync(path.join(dir, 'journal.jsonl'), 'utf8').split('\n').filter(Boolean).length;
    expect(lines).toBeLessThan(10);
    const s2 = await open({ dir });
    const list = await s2.list(ConfigMapType, { namespace: 'default' });
    expect(list.items).toHaveLength(25);
  });

  it('drops a torn final journal line (crash mid-write) and refuses a corrupt middle line', async () => {
    const dir = tmp();
    const s1 = await EmbeddedStore.open({ dir });
    await s1.create(ConfigMapType, cm('kept'));
    await s1.close();
    fs.appendFileSync(path.join(dir, 'journal.jsonl'), '{"rv":99,"op":"put","kind":"/configm');
    const s2 = await EmbeddedStore.open({ dir });
    expect(
      (await s2.list(ConfigMapType, { namespace: 'default' })).items.map((o) => o.metadata?.name),
    ).toEqual(['kept']);
    await s2.create(ConfigMapType, cm('after'));
    await s2.close();
    const s3 = await EmbeddedStore.open({ dir });
    expect((await s3.list(ConfigMapType, { namespace: 'default' })).items).toHaveLength(2);
    await s3.close();
    const j = path.join(dir, 'journal.jsonl');
    const text = fs.readFileSync(j, 'utf8').split('\n');
    text[1] = '{broken';
    fs.writeFileSync(j, text.join('\n'));
    await expect(EmbeddedStore.open({ dir })).rejects.toThrow(/journal.jsonl: line 2 is corrupt/);
  });

  it('one process at a time: a second open of the same directory is refused', async () => {
    const dir = tmp();
    await open({ dir });
    await expect(EmbeddedStore.open({ dir })).rejects.toThrow(/already open in this process/);
  });

  it('finishes a foreground deletion interrupted by a restart', async () => {
    const dir = tmp();
    const s1 = await EmbeddedStore.open({ dir });
    const owner = await s1.create(ConfigMapType, cm('owner'));
    const ref = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'owner',
      uid: owner.metadata!.uid!,
      controller: true,
    };
    await s1.create(
      ConfigMapType,
      cm('dep', {}, { ownerReferences: [ref], finalizers: ['example.com/hold'] }),
    );
    await s1.delete(ConfigMapType, 'owner', { namespace: 'default', propagationPolicy: 'Foreground' });
    await eventually('dependent is deleting', async () =>
      Boolean((await s1.get(ConfigMapType, 'dep', 'default')).metadata?.deletionTimestamp),
    );
    await s1.close();
    const s2 = await open({ dir });
    await clearFinalizers(s2, ConfigMapType, 'dep', 'default');
    await eventually('owner removed after restart', async () =>
      s2.get(ConfigMapType, 'owner', 'default').then(
        () => false,
        (e) => e instanceof NotFoundError,
      ),
    );
  });
});

describe('EmbeddedStore semantics', () => {
  it('sends bookmarks with the latest resourceVersion to watches that ask', async () => {
    const s = await open({ bookmarkIntervalMs: 20 });
    const evs: WatchEvent[] = [];
    const h = await s.watch(
      ConfigMapType,
      { namespace: 'default', resourceVersion: s.resourceVersion, allowWatchBookmarks: true },
      (e) => evs.push(e),
    );
    await s.create(ConfigMapType, cm('x'));
    await eventually('a bookmark', async () => evs.some((e) => e.type === 'BOOKMARK'));
    h.stop();
    const bm = evs.find((e) => e.type === 'BOOKMARK')!;
    expect(bm.object.metadata?.resourceVersion).toBe(s.resourceVersion);
    expect(evs[0].type).toBe('ADDED');
  });

  it('deleting a namespace deletes its contents, then the namespace; new content is refused meanwhile', async () => {
    const s = await open({});
    await s.create(NamespaceType, { metadata: { name: 'tmp' } });
    await s.create(ConfigMapType, {
      metadata: { name: 'held', namespace: 'tmp', finalizers: ['example.com/hold'] },
    });
    const r = await s.delete(NamespaceType, 'tmp');
    expect(r.pending).toBe(true);
    expect(((await s.get(NamespaceType, 'tmp')).status as { phase: string }).phase).toBe('Terminating');
    await expect(
      s.create(ConfigMapType, { metadata: { name: 'late', namespace: 'tmp' } }),
    ).rejects.toBeInstanceOf(ForbiddenError);
    const held = await eventually('content is deleting', async () => {
      const o = await s.get(ConfigMapType, 'held', 'tmp');
      return o.metadata?.deletionTimestamp ? o : undefined;
    });
    await s.update(ConfigMapType, { ...held, metadata: { ...held.metadata, finalizers: [] } });
    await eventually('namespace gone', async () =>
      s.get(NamespaceType, 'tmp').then(
        () => false,
        (e) => e instanceof NotFoundError,
      ),
    );
  });

  it('refuses objects in a missing namespace and unknown kinds, naming them', async () => {
    const s = await open({});
    await expect(s.create(ConfigMapType, { metadata: { name: 'x', namespace: 'nope' } })).rejects.toThrow(
      /namespaces "nope" not found/,
    );
    const unknown = {
      group: 'example.com',
      version: 'v1',
      kind: 'Thing',
      plural: 'things',
      namespaced: true,
    };
    await expect(s.list(unknown)).rejects.toThrow(/things.example.com\/v1.*CustomResourceDefinition/);
    await expect(
      s.create(ConfigMapType, { kind: 'Secret', metadata: { name: 'x', namespace: 'default' } }),
    ).rejects.toThrow(/kind of the object \(Secret\) does not match/);
  });

  it('a watcher writing from its callback cannot reorder events for the other watchers', async () => {
    const s = await open({});
    const seenByB: string[] = [];
    let reacted = false;
    const a = await s.watch(
      ConfigMapType,
      { namespace: 'default', resourceVersion: s.resourceVersion },
      (e) => {
        if (!reacted && e.type === 'ADDED') {
          reacted = true;
          void s.patch(
            ConfigMapType,
            e.object.metadata!.name!,
            { data: { by: 'a' } },
            { namespace: 'default', type: 'merge' },
          );
        }
      },
    );
    const b = await s.watch(
      ConfigMapType,
      { namespace: 'default', resourceVersion: s.resourceVersion },
      (e) => {
        seenByB.push(`${e.type} ${e.object.metadata?.resourceVersion}`);
      },
    );
    const created = await s.create(ConfigMapType, cm('re'));
    await eventually('b sees both events', async () => seenByB.length === 2);
    const rv = Number(created.metadata?.resourceVersion);
    expect(seenByB).toEqual([`ADDED ${rv}`, `MODIFIED ${rv + 1}`]);
    a.stop();
    b.stop();
  });

  it('a no-op update does not bump the resourceVersion', async () => {
    const s = await open({});
    const a = await s.create(ConfigMapType, cm('same', { k: 'v' }));
    const b = await s.update(ConfigMapType, a);
    expect(b.metadata?.resourceVersion).toBe(a.metadata?.resourceVersion);
  });
});
