/**
 * The ObjectClient contract: one suite, run against every backend (the embedded store in
 * process, the embedded store over its unix-socket REST server through KubeClient, and a
 * real kube-apiserver). Each backend file supplies a fixture; the tests only use the port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  ApiError,
  ConfigMapType,
  ConflictError,
  CustomResourceDefinitionType,
  GoneError,
  InvalidError,
  type KubeObject,
  NamespaceType,
  NotFoundError,
  type ObjectClient,
  type ResourceType,
  type WatchEvent,
} from '../../../src/controllers/runtime';

/** What a backend provides to the suite. */
export interface ContractFixture {
  client: ObjectClient;
  /** Makes the watch history older than `rv` unavailable (the real server's history is already short). */
  compact?: () => Promise<void>;
  /** Whether a garbage collector runs (kube-controller-manager, or the embedded one). */
  garbageCollector: boolean;
  close(): Promise<void>;
}

/** The test kind: a namespaced custom resource with a status subresource. */
export const WidgetType: ResourceType = {
  group: 'contract.kubevirt-ts.io',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
  statusSubresource: true,
};

export const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.contract.kubevirt-ts.io' },
  spec: {
    group: WidgetType.group,
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

interface Widget extends KubeObject {
  spec?: { size?: number; color?: string; items?: string[]; count?: number };
  status?: { phase?: string };
}

/** Polls `fn` until it returns a truthy value; fails with `what` when it never does. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  tries = 300,
): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

/** Installs the Widget CRD (idempotent) and waits until it is served. */
export async function ensureWidgetCrd(client: ObjectClient): Promise<void> {
  try {
    await client.create(CustomResourceDefinitionType, widgetCrd);
  } catch (err) {
    if (!(err instanceof AlreadyExistsError)) throw err;
  }
  await eventually('the Widget CRD is established and served', async () => {
    try {
      await client.list(WidgetType, { namespace: 'default', limit: 1 });
      return true;
    } catch {
      return false;
    }
  });
}

async function gone(
  client: ObjectClient,
  type: ResourceType,
  name: string,
  namespace?: string,
): Promise<boolean> {
  try {
    await client.get(type, name, namespace);
    return false;
  } catch (err) {
    if (err instanceof NotFoundError) return true;
    throw err;
  }
}

/**
 * Removes every finalizer with a read-modify-write that retries on Conflict: the garbage
 * collector may be updating the same object (e.g. its own foregroundDeletion finalizer).
 */
export async function clearFinalizers(
  client: ObjectClient,
  type: ResourceType,
  name: string,
  namespace?: string,
): Promise<void> {
  for (;;) {
    const cur = await client.get(type, name, namespace);
    try {
      await client.update(type, { ...cur, metadata: { ...cur.metadata, finalizers: [] } });
      return;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}

/** Collects watch events until `until` says stop. */
async function collect(
  client: ObjectClient,
  type: ResourceType,
  opts: Parameters<ObjectClient['watch']>[1],
  act: () => Promise<void>,
  until: (evs: WatchEvent<Widget>[]) => boolean,
): Promise<WatchEvent<Widget>[]> {
  const events: WatchEvent<Widget>[] = [];
  const wake = () => {};
  const w = await client.watch<Widget>(type, opts, (ev) => {
    if (ev.type !== 'BOOKMARK') events.push(ev);
    wake();
  });
  try {
    await act();
    await eventually(`watch events ${JSON.stringify(events.map((e) => e.type))}`, async () => until(events));
  } finally {
    w.stop();
  }
  return events;
}

/** Registers the contract tests for one backend. */
export function objectClientContract(
  backend: string,
  setup: () => Promise<ContractFixture | undefined>,
): void {
  describe(`ObjectClient contract: ${backend}`, () => {
    let f: ContractFixture | undefined;
    let c: ObjectClient;
    const ns = `contract-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
    const ns2 = `${ns}-b`;
    const w = (
      name: string,
      spec: Widget['spec'] = { size: 1 },
      labels?: Record<string, string>,
    ): Widget => ({
      apiVersion: 'contract.kubevirt-ts.io/v1',
      kind: 'Widget',
      metadata: { name, namespace: ns, labels },
      spec,
    });

    beforeAll(async () => {
      f = await setup();
      if (!f) return;
      c = f.client;
      await ensureWidgetCrd(c);
      await c.create(NamespaceType, { metadata: { name: ns } });
      await c.create(NamespaceType, { metadata: { name: ns2 } });
    });
    afterAll(async () => {
      if (!f) return;
      for (const n of [ns, ns2]) await c.delete(NamespaceType, n).catch(() => {});
      await f.close();
    });
    const test = (name: string, fn: () => Promise<void>) =>
      it(name, async (ctx) => {
        if (!f)
          ctx.skip(
            'backend unavailable (see the integration() warning): waits for the kube binaries built by scripts/kube/build.sh',
          );
        await fn();
      });
    /** Tests of cascading deletion, which need a garbage collector running. */
    const gcTest = (name: string, fn: () => Promise<void>) =>
      it(name, async (ctx) => {
        if (!f?.garbageCollector)
          ctx.skip('this backend runs no garbage collector, so cascading deletion cannot be observed');
        await fn();
      });

    test('create fills server fields; get returns the same object', async () => {
      const created = await c.create(WidgetType, w('a1', { size: 3 }));
      expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(Number(created.metadata?.resourceVersion)).toBeGreaterThan(0);
      expect(created.metadata?.generation).toBe(1);
      expect(typeof created.metadata?.creationTimestamp).toBe('string');
      expect(created.metadata?.namespace).toBe(ns);
      const got = await c.get<Widget>(WidgetType, 'a1', ns);
      expect(got.spec).toEqual({ size: 3 });
      expect(got.metadata?.uid).toBe(created.metadata?.uid);
      expect(got.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
      expect(got.kind).toBe('Widget');
      expect(got.apiVersion).toBe('contract.kubevirt-ts.io/v1');
    });

    test('typed errors: AlreadyExists, NotFound, Invalid with the field cause', async () => {
      await c.create(WidgetType, w('e1'));
      const dup = await c.create(WidgetType, w('e1')).catch((e) => e);
      expect(dup).toBeInstanceOf(AlreadyExistsError);
      expect(dup.reason).toBe('AlreadyExists');
      expect(dup.code).toBe(409);
      const missing = await c.get(WidgetType, 'nope', ns).catch((e) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
      expect(missing.reason).toBe('NotFound');
      expect(missing.message).toContain('"nope" not found');
      const bad = await c.create(WidgetType, w('Bad_Name')).catch((e) => e);
      expect(bad).toBeInstanceOf(InvalidError);
      expect(bad.reason).toBe('Invalid');
      expect(bad.causes.map((x: { field?: string }) => x.field)).toContain('metadata.name');
    });

    test('generateName makes a unique name', async () => {
      const a = await c.create<KubeObject>(WidgetType, {
        ...w(''),
        metadata: { generateName: 'gen-', namespace: ns },
      });
      const b = await c.create<KubeObject>(WidgetType, {
        ...w(''),
        metadata: { generateName: 'gen-', namespace: ns },
      });
      expect(a.metadata?.name).toMatch(/^gen-[a-z0-9]+$/);
      expect(a.metadata?.name).not.toBe(b.metadata?.name);
    });

    test('update: optimistic concurrency, generation bumps on spec changes only', async () => {
      const v1 = await c.create(WidgetType, w('u1', { size: 1 }));
      const v2 = await c.update(WidgetType, { ...v1, metadata: { ...v1.metadata, labels: { x: 'y' } } });
      expect(v2.metadata?.generation).toBe(1);
      expect(Number(v2.metadata?.resourceVersion)).toBeGreaterThan(Number(v1.metadata?.resourceVersion));
      const v3 = await c.update<Widget>(WidgetType, { ...v2, spec: { size: 2 } });
      expect(v3.metadata?.generation).toBe(2);
      expect(v3.spec?.size).toBe(2);
      const stale = await c.update(WidgetType, { ...v1, spec: { size: 9 } }).catch((e) => e);
      expect(stale).toBeInstanceOf(ConflictError);
      expect(stale.reason).toBe('Conflict');
      expect((await c.get<Widget>(WidgetType, 'u1', ns)).spec?.size).toBe(2);
      const missing = await c.update(WidgetType, w('never-created')).catch((e) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
    });

    test('status subresource: update ignores status, updateStatus changes only status', async () => {
      const v1 = await c.create<Widget>(WidgetType, {
        ...w('s1', { size: 1 }),
        status: { phase: 'Ignored' },
      });
      expect(v1.status).toBeUndefined();
      const v2 = await c.update<Widget>(WidgetType, { ...v1, status: { phase: 'Nope' } });
      expect(v2.status).toBeUndefined();
      const v3 = await c.updateStatus<Widget>(WidgetType, {
        ...v2,
        spec: { size: 50 },
        status: { phase: 'Running' },
      });
      expect(v3.status?.phase).toBe('Running');
      expect(v3.spec?.size).toBe(1);
      expect(v3.metadata?.generation).toBe(1);
      const stale = await c.updateStatus(WidgetType, { ...v1, status: { phase: 'Old' } }).catch((e) => e);
      expect(stale).toBeInstanceOf(ConflictError);
      const v4 = await c.patch<Widget>(
        WidgetType,
        's1',
        { status: { phase: 'Patched' } },
        {
          namespace: ns,
          type: 'merge',
          subresource: 'status',
        },
      );
      expect(v4.status?.phase).toBe('Patched');
    });

    test('list: namespaces, label selectors, field selectors, pagination', async () => {
      const run = `r${Date.now().toString(36)}`;
      await c.create(WidgetType, w('l1', {}, { run, tier: 'web' }));
      await c.create(WidgetType, w('l2', {}, { run, tier: 'db' }));
      await c.create(WidgetType, w('l3', {}, { run }));
      await c.create(WidgetType, {
        ...w('l4', {}, { run, tier: 'web' }),
        metadata: { name: 'l4', namespace: ns2, labels: { run, tier: 'web' } },
      });
      const names = async (opts: Parameters<ObjectClient['list']>[1]) =>
        (await c.list(WidgetType, opts)).items
          .map((i) => `${i.metadata?.namespace === ns2 ? 'b/' : ''}${i.metadata?.name}`)
          .sort();
      expect(await names({ namespace: ns, labelSelector: `run=${run}` })).toEqual(['l1', 'l2', 'l3']);
      expect(await names({ labelSelector: `run=${run},tier=web` })).toEqual(['b/l4', 'l1']);
      expect(await names({ namespace: ns, labelSelector: `run=${run},tier in (db,web)` })).toEqual([
        'l1',
        'l2',
      ]);
      expect(await names({ namespace: ns, labelSelector: `run=${run},tier!=web` })).toEqual(['l2', 'l3']);
      expect(await names({ namespace: ns, labelSelector: `run=${run},!tier` })).toEqual(['l3']);
      expect(
        await names({ namespace: ns, labelSelector: `run=${run}`, fieldSelector: 'metadata.name=l2' }),
      ).toEqual(['l2']);
      expect(
        await names({ namespace: ns, labelSelector: `run=${run}`, fieldSelector: 'metadata.name!=l2' }),
      ).toEqual(['l1', 'l3']);
      const page1 = await c.list(WidgetType, { namespace: ns, labelSelector: `run=${run}`, limit: 2 });
      expect(page1.items).toHaveLength(2);
      expect(page1.metadata.continue).toMatch(/.+/);
      const page2 = await c.list(WidgetType, {
        namespace: ns,
        labelSelector: `run=${run}`,
        limit: 2,
        continue: page1.metadata.continue,
      });
      expect([...page1.items, ...page2.items].map((i) => i.metadata?.name).sort()).toEqual([
        'l1',
        'l2',
        'l3',
      ]);
      expect(Number(page1.metadata.resourceVersion)).toBeGreaterThan(0);
      const bad = await c.list(WidgetType, { namespace: ns, labelSelector: 'a in (' }).catch((e) => e);
      expect(bad).toBeInstanceOf(ApiError);
      expect(bad.code).toBe(400);
    });

    test('patch: merge, JSON patch, server-side apply, resourceVersion precondition', async () => {
      await c.create(
        WidgetType,
        w('p1', { size: 1, color: 'red', items: ['a'] }, { keep: 'yes', drop: 'yes' }),
      );
      const m = await c.patch<Widget>(
        WidgetType,
        'p1',
        { metadata: { labels: { drop: null, add: 'v' } }, spec: { size: 2 } },
        {
          namespace: ns,
          type: 'merge',
        },
      );
      expect(m.metadata?.labels).toEqual({ keep: 'yes', add: 'v' });
      expect(m.spec).toEqual({ size: 2, color: 'red', items: ['a'] });
      expect(m.metadata?.generation).toBe(2);
      const j = await c.patch<Widget>(
        WidgetType,
        'p1',
        [
          { op: 'test', path: '/spec/color', value: 'red' },
          { op: 'replace', path: '/spec/color', value: 'blue' },
          { op: 'add', path: '/spec/items/-', value: 'b' },
        ],
        { namespace: ns, type: 'json' },
      );
      expect(j.spec).toEqual({ size: 2, color: 'blue', items: ['a', 'b'] });
      const failed = await c
        .patch(WidgetType, 'p1', [{ op: 'test', path: '/spec/color', value: 'green' }], {
          namespace: ns,
          type: 'json',
        })
        .catch((e) => e);
      expect(failed).toBeInstanceOf(ApiError);
      expect(failed.code).toBe(422);
      const stale = await c
        .patch(
          WidgetType,
          'p1',
          { metadata: { resourceVersion: m.metadata?.resourceVersion }, spec: { size: 7 } },
          {
            namespace: ns,
            type: 'merge',
          },
        )
        .catch((e) => e);
      expect(stale).toBeInstanceOf(ConflictError);
      const missing = await c.patch(WidgetType, 'nope', {}, { namespace: ns, type: 'merge' }).catch((e) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
      const applied = await c.patch<Widget>(
        WidgetType,
        'p2',
        {
          apiVersion: 'contract.kubevirt-ts.io/v1',
          kind: 'Widget',
          metadata: { name: 'p2', namespace: ns },
          spec: { size: 5 },
        },
        { namespace: ns, type: 'apply', fieldManager: 'contract' },
      );
      expect(applied.spec).toEqual({ size: 5 });
      expect(applied.metadata?.generation).toBe(1);
      const reapplied = await c.patch<Widget>(
        WidgetType,
        'p2',
        {
          apiVersion: 'contract.kubevirt-ts.io/v1',
          kind: 'Widget',
          metadata: { name: 'p2', namespace: ns },
          spec: { size: 6 },
        },
        { namespace: ns, type: 'apply', fieldManager: 'contract' },
      );
      expect(reapplied.spec?.size).toBe(6);
      expect(reapplied.metadata?.generation).toBe(2);
    });

    test('delete: preconditions, finalizers keep the object with a deletionTimestamp', async () => {
      const o = await c.create<KubeObject>(WidgetType, {
        ...w('d1'),
        metadata: { name: 'd1', namespace: ns, finalizers: ['example.com/hold'] },
      });
      const badUid = await c
        .delete(WidgetType, 'd1', {
          namespace: ns,
          preconditions: { uid: '00000000-0000-0000-0000-000000000000' },
        })
        .catch((e) => e);
      expect(badUid).toBeInstanceOf(ConflictError);
      const badRv = await c
        .delete(WidgetType, 'd1', { namespace: ns, preconditions: { resourceVersion: '1' } })
        .catch((e) => e);
      expect(badRv).toBeInstanceOf(ConflictError);
      const r = await c.delete(WidgetType, 'd1', { namespace: ns, preconditions: { uid: o.metadata?.uid } });
      expect(r.pending).toBe(true);
      const held = await c.get(WidgetType, 'd1', ns);
      expect(Date.parse(String(held.metadata?.deletionTimestamp))).not.toBeNaN();
      expect(held.metadata?.finalizers).toEqual(['example.com/hold']);
      await c.update(WidgetType, { ...held, metadata: { ...held.metadata, finalizers: [] } });
      expect(await gone(c, WidgetType, 'd1', ns)).toBe(true);
      await c.create(WidgetType, w('d2'));
      const r2 = await c.delete(WidgetType, 'd2', { namespace: ns });
      expect(r2.pending).toBe(false);
      expect(await gone(c, WidgetType, 'd2', ns)).toBe(true);
      const again = await c.delete(WidgetType, 'd2', { namespace: ns }).catch((e) => e);
      expect(again).toBeInstanceOf(NotFoundError);
    });

    test('watch: ordered events from a resourceVersion, selector transitions', async () => {
      const start = (await c.list(WidgetType, { namespace: ns })).metadata.resourceVersion;
      const evs = await collect(
        c,
        WidgetType,
        { namespace: ns, resourceVersion: start, labelSelector: 'watched=yes' },
        async () => {
          const a = await c.create(WidgetType, w('w1', { size: 1 }, { watched: 'yes' }));
          await c.create(WidgetType, w('w2', { size: 1 }, { watched: 'no' }));
          await c.patch(WidgetType, 'w1', { spec: { size: 2 } }, { namespace: ns, type: 'merge' });
          await c.patch(
            WidgetType,
            'w2',
            { metadata: { labels: { watched: 'yes' } } },
            { namespace: ns, type: 'merge' },
          );
          await c.patch(
            WidgetType,
            'w1',
            { metadata: { labels: { watched: 'no' } } },
            { namespace: ns, type: 'merge' },
          );
          await c.delete(WidgetType, 'w2', { namespace: ns });
          expect(a.metadata?.name).toBe('w1');
        },
        (e) => e.length >= 5,
      );
      expect(evs.map((e) => `${e.type} ${e.object.metadata?.name}`)).toEqual([
        'ADDED w1',
        'MODIFIED w1',
        'ADDED w2',
        'DELETED w1',
        'DELETED w2',
      ]);
      const rvs = evs.map((e) => Number(e.object.metadata?.resourceVersion));
      expect([...rvs].sort((a, b) => a - b)).toEqual(rvs);
    });

    test('watch without a resourceVersion starts with the current objects', async () => {
      await c.create(WidgetType, w('x1', {}, { initial: 'yes' }));
      await c.create(WidgetType, w('x2', {}, { initial: 'yes' }));
      const evs = await collect(
        c,
        WidgetType,
        { namespace: ns, labelSelector: 'initial=yes' },
        async () => {},
        (e) => e.length >= 2,
      );
      expect(evs.map((e) => `${e.type} ${e.object.metadata?.name}`).sort()).toEqual(['ADDED x1', 'ADDED x2']);
    });

    test('watch from a compacted resourceVersion ends with 410 Gone', async () => {
      await c.create(WidgetType, w('g1'));
      await f!.compact?.();
      const h = await c.watch(WidgetType, { namespace: ns, resourceVersion: '1' }, () => {}).catch((e) => e);
      const err = h instanceof Error ? h : await h.closed;
      expect(err).toBeInstanceOf(GoneError);
      expect((err as GoneError).code).toBe(410);
    });

    test('two writers racing read-modify-write on one object lose no update', async () => {
      await c.create(WidgetType, w('race', { count: 0 }));
      let conflicts = 0;
      const writer = async (n: number) => {
        for (let i = 0; i < n; i++) {
          for (;;) {
            const cur = await c.get<Widget>(WidgetType, 'race', ns);
            try {
              await c.update(WidgetType, { ...cur, spec: { count: (cur.spec?.count ?? 0) + 1 } });
              break;
            } catch (err) {
              if (!(err instanceof ConflictError)) throw err;
              conflicts++;
            }
          }
        }
      };
      await Promise.all([writer(15), writer(15)]);
      const final = await c.get<Widget>(WidgetType, 'race', ns);
      expect(final.spec?.count).toBe(30);
      expect(final.metadata?.generation).toBe(31);
      expect(conflicts).toBeGreaterThanOrEqual(0);
    });

    // Owners are ConfigMaps: kube-controller-manager's garbage collector watches built-in kinds
    // from its start, but a new CRD's kind only after its periodic (30 s) discovery resync.
    const owned = (name: string, owner: KubeObject) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name,
        namespace: ns,
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: owner.metadata!.name!,
            uid: owner.metadata!.uid!,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      data: { k: 'v' },
    });

    gcTest('cascading deletion: background deletes dependents after the owner', async () => {
      const owner = await c.create(ConfigMapType, { metadata: { name: 'bg-owner', namespace: ns } });
      await c.create(ConfigMapType, owned('bg-dep', owner));
      const r = await c.delete(ConfigMapType, 'bg-owner', { namespace: ns, propagationPolicy: 'Background' });
      expect(r.pending).toBe(false);
      await eventually('background GC deletes the dependent', () => gone(c, ConfigMapType, 'bg-dep', ns));
    });

    gcTest('cascading deletion: foreground removes dependents first, then the owner', async () => {
      const owner = await c.create(ConfigMapType, { metadata: { name: 'fg-owner', namespace: ns } });
      await c.create(ConfigMapType, {
        ...owned('fg-dep', owner),
        metadata: { ...owned('fg-dep', owner).metadata, finalizers: ['example.com/hold'] },
      });
      const r = await c.delete(ConfigMapType, 'fg-owner', { namespace: ns, propagationPolicy: 'Foreground' });
      expect(r.pending).toBe(true);
      const dep = await eventually('foreground GC starts deleting the dependent', async () => {
        const d = await c.get(ConfigMapType, 'fg-dep', ns);
        return d.metadata?.deletionTimestamp ? d : undefined;
      });
      const o = await c.get(ConfigMapType, 'fg-owner', ns);
      expect(o.metadata?.finalizers).toContain('foregroundDeletion');
      expect(Date.parse(String(o.metadata?.deletionTimestamp))).not.toBeNaN();
      expect(dep.metadata?.finalizers).toContain('example.com/hold');
      await clearFinalizers(c, ConfigMapType, 'fg-dep', ns);
      await eventually('the owner goes once its dependent is gone', () =>
        gone(c, ConfigMapType, 'fg-owner', ns),
      );
    });

    gcTest('foreground deletion without dependents is pending, then finished by the collector', async () => {
      await c.create(ConfigMapType, { metadata: { name: 'fg-alone', namespace: ns } });
      const r = await c.delete(ConfigMapType, 'fg-alone', { namespace: ns, propagationPolicy: 'Foreground' });
      expect(r.pending).toBe(true);
      expect(r.object?.metadata?.finalizers).toContain('foregroundDeletion');
      await eventually('the collector removes it', () => gone(c, ConfigMapType, 'fg-alone', ns));
    });

    gcTest('cascading deletion: orphan keeps dependents and strips the owner reference', async () => {
      const owner = await c.create(ConfigMapType, { metadata: { name: 'or-owner', namespace: ns } });
      await c.create(ConfigMapType, owned('or-dep', owner));
      await c.delete(ConfigMapType, 'or-owner', { namespace: ns, propagationPolicy: 'Orphan' });
      await eventually('orphaning finishes', () => gone(c, ConfigMapType, 'or-owner', ns));
      const dep = await c.get(ConfigMapType, 'or-dep', ns);
      expect(dep.metadata?.ownerReferences ?? []).toEqual([]);
    });
  });
}
