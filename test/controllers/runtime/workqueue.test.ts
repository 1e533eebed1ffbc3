import { describe, expect, it } from 'vitest';
import {
  BucketRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  runKeyWorker,
  TokenBucket,
  WorkQueue,
} from '../../../src/controllers/runtime';
import { ConflictError } from '../../../src/controllers/runtime/errors';

const noLimit = () => new ItemExponentialRateLimiter<string>(1, 1000);

describe('WorkQueue', () => {
  it('hands items out in the order first added, each once (dedup)', async () => {
    const q = new WorkQueue<string>({ rateLimiter: noLimit() });
    for (const k of ['a', 'b', 'a', 'c', 'b']) q.add(k);
    expect(q.len()).toBe(3);
    const got = [await q.get(), await q.get(), await q.get()];
    expect(got).toEqual(['a', 'b', 'c']);
    expect(q.len()).toBe(0);
  });

  it('never hands one key to two workers; a key added while processing comes back after done', async () => {
    const q = new WorkQueue<string>({ rateLimiter: noLimit() });
    q.add('k');
    const first = await q.get();
    q.add('k');
    q.add('k');
    expect(q.len()).toBe(0); // held back while 'k' is processing
    let second: string | undefined;
    const waiter = q.get().then((v) => {
      second = v;
    });
    await new Promise((r) => setImmediate(r));
    expect(second).toBeUndefined();
    q.done(first!);
    await waiter;
    expect(second).toBe('k');
    q.done('k');
    expect(q.len()).toBe(0);
  });

  it('a waiting worker gets a newly added item', async () => {
    const q = new WorkQueue<string>({ rateLimiter: noLimit() });
    const p = q.get();
    q.add('x');
    expect(await p).toBe('x');
  });

  it('addRateLimited backs off exponentially per item; forget resets', async () => {
    const rl = new ItemExponentialRateLimiter<string>(5, 1000);
    expect([rl.when('a'), rl.when('a'), rl.when('a'), rl.when('b')]).toEqual([5, 10, 20, 5]);
    expect(rl.numRequeues('a')).toBe(3);
    rl.forget('a');
    expect(rl.when('a')).toBe(5);
    const capped = new ItemExponentialRateLimiter<string>(100, 250);
    expect([capped.when('x'), capped.when('x'), capped.when('x')]).toEqual([100, 200, 250]);

    const q = new WorkQueue<string>({ rateLimiter: new ItemExponentialRateLimiter(20, 1000) });
    q.addRateLimited('r');
    expect(q.len()).toBe(0); // delayed, not queued yet
    expect(q.numRequeues('r')).toBe(1);
    expect(await q.get()).toBe('r');
    q.done('r');
    q.forget('r');
    expect(q.numRequeues('r')).toBe(0);
  });

  it('addAfter keeps the earliest pending time and dedups with add', async () => {
    const q = new WorkQueue<string>({ rateLimiter: noLimit() });
    q.addAfter('a', 10_000);
    q.addAfter('a', 5);
    expect(await q.get()).toBe('a');
    q.done('a');
    q.shutDown();
  });

  it('the overall token bucket delays once the burst is spent', () => {
    let t = 0;
    const b = new TokenBucket(10, 3, () => t);
    expect([b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 0]);
    expect(b.reserve()).toBeCloseTo(100);
    t = 1000;
    expect(b.reserve()).toBe(0);
    // Infinity: no limit (a client of the embedded store), never a wait and never NaN.
    const none = new TokenBucket(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, () => t);
    expect(Array.from({ length: 1000 }, () => none.reserve()).every((w) => w === 0)).toBe(true);
    const max = new MaxOfRateLimiter<string>(
      new ItemExponentialRateLimiter(1, 10),
      new BucketRateLimiter(1, 1),
    );
    expect(max.when('a')).toBe(1);
    expect(max.when('b')).toBeGreaterThan(900);
  });

  it('shutDown wakes waiting workers with undefined and ignores later adds', async () => {
    const q = new WorkQueue<string>({ rateLimiter: noLimit() });
    const waiting = [q.get(), q.get()];
    q.shutDown();
    expect(await Promise.all(waiting)).toEqual([undefined, undefined]);
    q.add('late');
    expect(await q.get()).toBeUndefined();
    expect(q.isShuttingDown()).toBe(true);
  });

  it('shutDownWithDrain waits for items being processed', async () => {
    const q = new WorkQueue<string>({ rateLimiter: noLimit() });
    q.add('busy');
    const k = await q.get();
    let drained = false;
    const d = q.shutDownWithDrain().then(() => {
      drained = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(drained).toBe(false);
    q.done(k!);
    await d;
    expect(drained).toBe(true);
  });
});

describe('runKeyWorker', () => {
  it('reconciles each key, requeues after the delay asked, retries failures and reports all but conflicts', async () => {
    const q = new WorkQueue<string>({ rateLimiter: noLimit() });
    const seen: string[] = [];
    const errors: string[] = [];
    const calls = new Map<string, number>();
    const reconcile = async (key: string) => {
      const n = (calls.get(key) ?? 0) + 1;
      calls.set(key, n);
      seen.push(`${key}${n}`);
      if (key === 'fails' && n === 1) throw new Error('boom');
      if (key === 'conflicts' && n === 1) throw new ConflictError(409, 'Conflict', 'stale');
      if (key === 'again' && n === 1) return 5;
      if (seen.length >= 7) q.shutDown();
      return undefined;
    };
    for (const k of ['plain', 'fails', 'conflicts', 'again']) q.add(k);
    await runKeyWorker(q, reconcile, (key, err) => errors.push(`${key}: ${err.message}`));
    expect(seen.slice(0, 4)).toEqual(['plain1', 'fails1', 'conflicts1', 'again1']);
    expect([...seen.slice(4)].sort()).toEqual(['again2', 'conflicts2', 'fails2']);
    expect(errors).toEqual(['fails: boom']);
  });
});
