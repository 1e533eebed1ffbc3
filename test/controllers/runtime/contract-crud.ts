/** The contract cases of reads and writes: create, typed errors, update, status, list, patch, delete. */
import { expect } from 'vitest';
import {
  AlreadyExistsError,
  ApiError,
  ConflictError,
  InvalidError,
  type KubeObject,
  NotFoundError,
  type ObjectClient,
} from '../../../src/controllers/runtime';
import { type ContractSuite, gone, type Widget, WidgetType } from './contract-support';

/** Registers the contract cases of reads and writes: create, typed errors, update, status, list, patch, delete. */
export function crudContract(s: ContractSuite): void {
  s.test('create fills server fields; get returns the same object', async () => {
    const created = await s.c.create(WidgetType, s.w('a1', { size: 3 }));
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(created.metadata?.resourceVersion)).toBeGreaterThan(0);
    expect(created.metadata?.generation).toBe(1);
    expect(typeof created.metadata?.creationTimestamp).toBe('string');
    expect(created.metadata?.namespace).toBe(s.ns);
    const got = await s.c.get<Widget>(WidgetType, 'a1', s.ns);
    expect(got.spec).toEqual({ size: 3 });
    expect(got.metadata?.uid).toBe(created.metadata?.uid);
    expect(got.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
    expect(got.kind).toBe('Widget');
    expect(got.apiVersion).toBe('contract.kubevirt-ts.io/v1');
  });

  s.test('typed errors: AlreadyExists, NotFound, Invalid with the field cause', async () => {
    await s.c.create(WidgetType, s.w('e1'));
    const dup = await s.c.create(WidgetType, s.w('e1')).catch((e) => e);
    expect(dup).toBeInstanceOf(AlreadyExistsError);
    expect(dup.reason).toBe('AlreadyExists');
    expect(dup.code).toBe(409);
    const missing = await s.c.get(WidgetType, 'nope', s.ns).catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.reason).toBe('NotFound');
    expect(missing.message).toContain('"nope" not found');
    const bad = await s.c.create(WidgetType, s.w('Bad_Name')).catch((e) => e);
    expect(bad).toBeInstanceOf(InvalidError);
    expect(bad.reason).toBe('Invalid');
    expect(bad.causes.map((x: { field?: string }) => x.field)).toContain('metadata.name');
  });

  s.test('generateName makes a unique name', async () => {
    const a = await s.c.create<KubeObject>(WidgetType, {
      ...s.w(''),
      metadata: { generateName: 'gen-', namespace: s.ns },
    });
    const b = await s.c.create<KubeObject>(WidgetType, {
      ...s.w(''),
      metadata: { generateName: 'gen-', namespace: s.ns },
    });
    expect(a.metadata?.name).toMatch(/^gen-[a-z0-9]+$/);
    expect(a.metadata?.name).not.toBe(b.metadata?.name);
  });

  s.test('update: optimistic concurrency, generation bumps on spec changes only', async () => {
    const v1 = await s.c.create(WidgetType, s.w('u1', { size: 1 }));
    const v2 = await s.c.update(WidgetType, { ...v1, metadata: { ...v1.metadata, labels: { x: 'y' } } });
    expect(v2.metadata?.generation).toBe(1);
    expect(Number(v2.metadata?.resourceVersion)).toBeGreaterThan(Number(v1.metadata?.resourceVersion));
    const v3 = await s.c.update<Widget>(WidgetType, { ...v2, spec: { size: 2 } });
    expect(v3.metadata?.generation).toBe(2);
    expect(v3.spec?.size).toBe(2);
    const stale = await s.c.update(WidgetType, { ...v1, spec: { size: 9 } }).catch((e) => e);
    expect(stale).toBeInstanceOf(ConflictError);
    expect(stale.reason).toBe('Conflict');
    expect((await s.c.get<Widget>(WidgetType, 'u1', s.ns)).spec?.size).toBe(2);
    const missing = await s.c.update(WidgetType, s.w('never-created')).catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
  });

  s.test('status subresource: update ignores status, updateStatus changes only status', async () => {
    const v1 = await s.c.create<Widget>(WidgetType, {
      ...s.w('s1', { size: 1 }),
      status: { phase: 'Ignored' },
    });
    expect(v1.status).toBeUndefined();
    const v2 = await s.c.update<Widget>(WidgetType, { ...v1, status: { phase: 'Nope' } });
    expect(v2.status).toBeUndefined();
    const v3 = await s.c.updateStatus<Widget>(WidgetType, {
      ...v2,
      spec: { size: 50 },
      status: { phase: 'Running' },
    });
    expect(v3.status?.phase).toBe('Running');
    expect(v3.spec?.size).toBe(1);
    expect(v3.metadata?.generation).toBe(1);
    const stale = await s.c.updateStatus(WidgetType, { ...v1, status: { phase: 'Old' } }).catch((e) => e);
    expect(stale).toBeInstanceOf(ConflictError);
    const v4 = await s.c.patch<Widget>(
      WidgetType,
      's1',
      { status: { phase: 'Patched' } },
      {
        namespace: s.ns,
        type: 'merge',
        subresource: 'status',
      },
    );
    expect(v4.status?.phase).toBe('Patched');
  });

  s.test('list: namespaces, label selectors, field selectors, pagination', async () => {
    const run = `r${Date.now().toString(36)}`;
    await s.c.create(WidgetType, s.w('l1', {}, { run, tier: 'web' }));
    await s.c.create(WidgetType, s.w('l2', {}, { run, tier: 'db' }));
    await s.c.create(WidgetType, s.w('l3', {}, { run }));
    await s.c.create(WidgetType, {
      ...s.w('l4', {}, { run, tier: 'web' }),
      metadata: { name: 'l4', namespace: s.ns2, labels: { run, tier: 'web' } },
    });
    const names = async (opts: Parameters<ObjectClient['list']>[1]) =>
      (await s.c.list(WidgetType, opts)).items
        .map((i) => `${i.metadata?.namespace === s.ns2 ? 'b/' : ''}${i.metadata?.name}`)
        .sort();
    expect(await names({ namespace: s.ns, labelSelector: `run=${run}` })).toEqual(['l1', 'l2', 'l3']);
    expect(await names({ labelSelector: `run=${run},tier=web` })).toEqual(['b/l4', 'l1']);
    expect(await names({ namespace: s.ns, labelSelector: `run=${run},tier in (db,web)` })).toEqual([
      'l1',
      'l2',
    ]);
    expect(await names({ namespace: s.ns, labelSelector: `run=${run},tier!=web` })).toEqual(['l2', 'l3']);
    expect(await names({ namespace: s.ns, labelSelector: `run=${run},!tier` })).toEqual(['l3']);
    expect(
      await names({ namespace: s.ns, labelSelector: `run=${run}`, fieldSelector: 'metadata.name=l2' }),
    ).toEqual(['l2']);
    expect(
      await names({ namespace: s.ns, labelSelector: `run=${run}`, fieldSelector: 'metadata.name!=l2' }),
    ).toEqual(['l1', 'l3']);
    const page1 = await s.c.list(WidgetType, { namespace: s.ns, labelSelector: `run=${run}`, limit: 2 });
    expect(page1.items).toHaveLength(2);
    expect(page1.metadata.continue).toMatch(/.+/);
    const page2 = await s.c.list(WidgetType, {
      namespace: s.ns,
      labelSelector: `run=${run}`,
      limit: 2,
      continue: page1.metadata.continue,
    });
    expect([...page1.items, ...page2.items].map((i) => i.metadata?.name).sort()).toEqual(['l1', 'l2', 'l3']);
    expect(Number(page1.metadata.resourceVersion)).toBeGreaterThan(0);
    const bad = await s.c.list(WidgetType, { namespace: s.ns, labelSelector: 'a in (' }).catch((e) => e);
    expect(bad).toBeInstanceOf(ApiError);
    expect(bad.code).toBe(400);
  });

  s.test('patch: merge, JSON patch, server-side apply, resourceVersion precondition', async () => {
    await s.c.create(
      WidgetType,
      s.w('p1', { size: 1, color: 'red', items: ['a'] }, { keep: 'yes', drop: 'yes' }),
    );
    const m = await s.c.patch<Widget>(
      WidgetType,
      'p1',
      { metadata: { labels: { drop: null, add: 'v' } }, spec: { size: 2 } },
      {
        namespace: s.ns,
        type: 'merge',
      },
    );
    expect(m.metadata?.labels).toEqual({ keep: 'yes', add: 'v' });
    expect(m.spec).toEqual({ size: 2, color: 'red', items: ['a'] });
    expect(m.metadata?.generation).toBe(2);
    const j = await s.c.patch<Widget>(
      WidgetType,
      'p1',
      [
        { op: 'test', path: '/spec/color', value: 'red' },
        { op: 'replace', path: '/spec/color', value: 'blue' },
        { op: 'add', path: '/spec/items/-', value: 'b' },
      ],
      { namespace: s.ns, type: 'json' },
    );
    expect(j.spec).toEqual({ size: 2, color: 'blue', items: ['a', 'b'] });
    const failed = await s.c
      .patch(WidgetType, 'p1', [{ op: 'test', path: '/spec/color', value: 'green' }], {
        namespace: s.ns,
        type: 'json',
      })
      .catch((e) => e);
    expect(failed).toBeInstanceOf(ApiError);
    expect(failed.code).toBe(422);
    const stale = await s.c
      .patch(
        WidgetType,
        'p1',
        { metadata: { resourceVersion: m.metadata?.resourceVersion }, spec: { size: 7 } },
        {
          namespace: s.ns,
          type: 'merge',
        },
      )
      .catch((e) => e);
    expect(stale).toBeInstanceOf(ConflictError);
    const missing = await s.c
      .patch(WidgetType, 'nope', {}, { namespace: s.ns, type: 'merge' })
      .catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    // Server-side apply of p2 with `size`: creates it, then changes it.
    const apply = (size: number) =>
      s.c.patch<Widget>(
        WidgetType,
        'p2',
        {
          apiVersion: 'contract.kubevirt-ts.io/v1',
          kind: 'Widget',
          metadata: { name: 'p2', namespace: s.ns },
          spec: { size },
        },
        { namespace: s.ns, type: 'apply', fieldManager: 'contract' },
      );
    const applied = await apply(5);
    expect(applied.spec).toEqual({ size: 5 });
    expect(applied.metadata?.generation).toBe(1);
    const reapplied = await apply(6);
    expect(reapplied.spec?.size).toBe(6);
    expect(reapplied.metadata?.generation).toBe(2);
  });

  s.test('delete: preconditions, finalizers keep the object with a deletionTimestamp', async () => {
    const o = await s.c.create<KubeObject>(WidgetType, {
      ...s.w('d1'),
      metadata: { name: 'd1', namespace: s.ns, finalizers: ['example.com/hold'] },
    });
    const badUid = await s.c
      .delete(WidgetType, 'd1', {
        namespace: s.ns,
        preconditions: { uid: '00000000-0000-0000-0000-000000000000' },
      })
      .catch((e) => e);
    expect(badUid).toBeInstanceOf(ConflictError);
    const badRv = await s.c
      .delete(WidgetType, 'd1', { namespace: s.ns, preconditions: { resourceVersion: '1' } })
      .catch((e) => e);
    expect(badRv).toBeInstanceOf(ConflictError);
    const r = await s.c.delete(WidgetType, 'd1', {
      namespace: s.ns,
      preconditions: { uid: o.metadata?.uid },
    });
    expect(r.pending).toBe(true);
    const held = await s.c.get(WidgetType, 'd1', s.ns);
    expect(Date.parse(String(held.metadata?.deletionTimestamp))).not.toBeNaN();
    expect(held.metadata?.finalizers).toEqual(['example.com/hold']);
    await s.c.update(WidgetType, { ...held, metadata: { ...held.metadata, finalizers: [] } });
    expect(await gone(s.c, WidgetType, 'd1', s.ns)).toBe(true);
    await s.c.create(WidgetType, s.w('d2'));
    const r2 = await s.c.delete(WidgetType, 'd2', { namespace: s.ns });
    expect(r2.pending).toBe(false);
    expect(await gone(s.c, WidgetType, 'd2', s.ns)).toBe(true);
    const again = await s.c.delete(WidgetType, 'd2', { namespace: s.ns }).catch((e) => e);
    expect(again).toBeInstanceOf(NotFoundError);
  });
}
