/** The contract cases of watches and of writers racing. */
import { expect } from 'vitest';
import { ConflictError, GoneError } from '../../../src/controllers/runtime';
import { type ContractSuite, collect, type Widget, WidgetType } from './contract-support';

/** Registers the contract cases of watches and of writers racing. */
export function watchContract(s: ContractSuite): void {
  s.test('watch: ordered events from a resourceVersion, selector transitions', async () => {
    const start = (await s.c.list(WidgetType, { namespace: s.ns })).metadata.resourceVersion;
    const evs = await collect(
      s.c,
      WidgetType,
      { namespace: s.ns, resourceVersion: start, labelSelector: 'watched=yes' },
      async () => {
        const a = await s.c.create(WidgetType, s.w('w1', { size: 1 }, { watched: 'yes' }));
        await s.c.create(WidgetType, s.w('w2', { size: 1 }, { watched: 'no' }));
        await s.c.patch(WidgetType, 'w1', { spec: { size: 2 } }, { namespace: s.ns, type: 'merge' });
        await s.c.patch(
          WidgetType,
          'w2',
          { metadata: { labels: { watched: 'yes' } } },
          { namespace: s.ns, type: 'merge' },
        );
        await s.c.patch(
          WidgetType,
          'w1',
          { metadata: { labels: { watched: 'no' } } },
          { namespace: s.ns, type: 'merge' },
        );
        await s.c.delete(WidgetType, 'w2', { namespace: s.ns });
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

  s.test('watch without a resourceVersion starts with the current objects', async () => {
    await s.c.create(WidgetType, s.w('x1', {}, { initial: 'yes' }));
    await s.c.create(WidgetType, s.w('x2', {}, { initial: 'yes' }));
    const evs = await collect(
      s.c,
      WidgetType,
      { namespace: s.ns, labelSelector: 'initial=yes' },
      async () => {},
      (e) => e.length >= 2,
    );
    expect(evs.map((e) => `${e.type} ${e.object.metadata?.name}`).sort()).toEqual(['ADDED x1', 'ADDED x2']);
  });

  s.test('watch from a compacted resourceVersion ends with 410 Gone', async () => {
    await s.c.create(WidgetType, s.w('g1'));
    await s.f!.compact?.();
    const h = await s.c
      .watch(WidgetType, { namespace: s.ns, resourceVersion: '1' }, () => {})
      .catch((e) => e);
    const err = h instanceof Error ? h : await h.closed;
    expect(err).toBeInstanceOf(GoneError);
    expect((err as GoneError).code).toBe(410);
  });

  s.test('two writers racing read-modify-write on one object lose no update', async () => {
    await s.c.create(WidgetType, s.w('race', { count: 0 }));
    let conflicts = 0;
    const writer = async (n: number) => {
      for (let i = 0; i < n; i++) {
        for (;;) {
          const cur = await s.c.get<Widget>(WidgetType, 'race', s.ns);
          try {
            await s.c.update(WidgetType, { ...cur, spec: { count: (cur.spec?.count ?? 0) + 1 } });
            break;
          } catch (err) {
            if (!(err instanceof ConflictError)) throw err;
            conflicts++;
          }
        }
      }
    };
    await Promise.all([writer(15), writer(15)]);
    const final = await s.c.get<Widget>(WidgetType, 'race', s.ns);
    expect(final.spec?.count).toBe(30);
    expect(final.metadata?.generation).toBe(31);
    expect(conflicts).toBeGreaterThanOrEqual(0);
  });
}
