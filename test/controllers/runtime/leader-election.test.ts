import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedStore, type KubeObject, LeaderElector, LeaseType } from '../../../src/controllers/runtime';
import { eventually } from './contract';

let store: EmbeddedStore | undefined;
afterEach(async () => {
  await store?.close();
});

const opts = (identity: string) => ({
  name: 'le',
  namespace: 'default',
  identity,
  leaseDurationMs: 1000,
  renewDeadlineMs: 500,
  retryPeriodMs: 100,
});

describe('LeaderElector', () => {
  it('takes over only after the holder stops renewing for a lease duration (crashed leader)', async () => {
    store = await EmbeddedStore.open();
    const a = new LeaderElector(store, opts('a'));
    const b = new LeaderElector(store, opts('b'));
    expect(await a.tryAcquireOrRenew()).toBe(true);
    expect(await b.tryAcquireOrRenew()).toBe(false);
    expect(await a.tryAcquireOrRenew()).toBe(true); // renews
    expect(await b.tryAcquireOrRenew()).toBe(false);
    // a "crashes": no more renewals. b wins once the lease has not changed for its duration.
    await eventually('b takes over', () => b.tryAcquireOrRenew());
    const lease = await store.get<KubeObject & { spec: Record<string, unknown> }>(LeaseType, 'le', 'default');
    expect(lease.spec.holderIdentity).toBe('b');
    expect(lease.spec.leaseTransitions).toBe(1);
    expect(String(lease.spec.renewTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(await a.tryAcquireOrRenew()).toBe(false);
  });

  it('a leader that cannot renew steps down after the renew deadline', async () => {
    store = await EmbeddedStore.open();
    const a = new LeaderElector(store, opts('a'));
    const ac = new AbortController();
    expect(await a.acquire(ac.signal)).toBe(true);
    // Someone else overwrites the lease: a's renewals now fail.
    const lease = await store.get<KubeObject & { spec: Record<string, unknown> }>(LeaseType, 'le', 'default');
    await store.update(LeaseType, { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder' } });
    const keepIntruder = setInterval(() => {
      void store!
        .patch(
          LeaseType,
          'le',
          { spec: { renewTime: new Date().toISOString().replace('Z', '000Z') } },
          { namespace: 'default', type: 'merge' },
        )
        .catch(() => {});
    }, 50);
    try {
      await a.renewLoop(ac.signal);
      expect(a.isLeader()).toBe(false);
    } finally {
      clearInterval(keepIntruder);
      ac.abort();
    }
  });
});
