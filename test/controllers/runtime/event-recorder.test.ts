import { afterEach, describe, expect, it } from 'vitest';
import {
  EmbeddedStore,
  EventRecorder,
  EventType,
  type KubeObject,
  type ObjectClient,
} from '../../../src/controllers/runtime';
import { MAX_QUEUED_EVENTS } from '../../../src/controllers/runtime/event-recorder';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Ev = KubeObject & { reason?: string; count?: number };
const pod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
});

/** The store, with its creates and patches slowed and counted in flight. */
async function slowClient(): Promise<{
  client: ObjectClient;
  store: EmbeddedStore;
  maxInFlight: () => number;
}> {
  const store = await EmbeddedStore.open();
  cleanups.push(() => store.close());
  let inFlight = 0;
  let max = 0;
  const client = Object.create(store) as ObjectClient;
  for (const m of ['create', 'patch'] as const) {
    const orig = store[m].bind(store) as (...a: unknown[]) => Promise<unknown>;
    (client as unknown as Record<string, unknown>)[m] = async (...a: unknown[]) => {
      max = Math.max(max, ++inFlight);
      await new Promise((r) => setTimeout(r, 1));
      try {
        return await orig(...a);
      } finally {
        inFlight--;
      }
    };
  }
  return { client, store, maxInFlight: () => max };
}

describe('EventRecorder', () => {
  it('writes events one at a time, in order, folding repeats', async () => {
    const { client, store, maxInFlight } = await slowClient();
    const r = new EventRecorder(client, { component: 'test' });
    for (let i = 0; i < 20; i++) r.event(pod(`p${i % 10}`), 'Normal', 'Started', 'started');
    await r.flush();
    expect(maxInFlight()).toBe(1);
    const events = (await store.list<Ev>(EventType, { namespace: 'default' })).items;
    expect(events).toHaveLength(10);
    expect(events.map((e) => e.count)).toEqual(Array(10).fill(2));
    expect(r.dropped).toBe(0);
  });

  it('drops events beyond the queue, counted and reported, as client-go does', async () => {
    const { client, store } = await slowClient();
    const errors: string[] = [];
    const r = new EventRecorder(client, { component: 'test' }, (e) => errors.push(e.message));
    const n = MAX_QUEUED_EVENTS + 50;
    for (let i = 0; i < n; i++) r.event(pod(`p${i}`), 'Normal', 'Created', `created ${i}`);
    // The first is being written, MAX_QUEUED_EVENTS wait: the rest are dropped.
    expect(r.dropped).toBe(n - MAX_QUEUED_EVENTS - 1);
    expect(errors).toEqual([`event queue full (${MAX_QUEUED_EVENTS}): 1 dropped so far`]);
    await r.flush();
    const events = (await store.list<Ev>(EventType, { namespace: 'default' })).items;
    expect(events).toHaveLength(MAX_QUEUED_EVENTS + 1);
    // Room again once written.
    r.event(pod('late'), 'Normal', 'Created', 'late');
    await r.flush();
    expect((await store.list<Ev>(EventType, { namespace: 'default' })).items).toHaveLength(
      MAX_QUEUED_EVENTS + 2,
    );
  }, 30_000);
});
