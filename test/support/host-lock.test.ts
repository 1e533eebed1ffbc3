import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { acquireHostLock, acquireHostLocks } from './host-lock';

describe('host locks', () => {
  it('holds a lock until released; a second taker waits and times out naming the holder', async () => {
    const release = await acquireHostLock(`unit-${process.pid}`, 1_000);
    await expect(acquireHostLock(`unit-${process.pid}`, 600)).rejects.toThrow(
      `host lock unit-${process.pid}: still held by pid ${process.pid}`,
    );
    release();
    (await acquireHostLock(`unit-${process.pid}`, 1_000))();
  });

  it("takes over a dead owner's lock", async () => {
    const dir = `/tmp/kvts-test-unit-dead-${process.pid}.lock`;
    mkdirSync(dir);
    writeFileSync(`${dir}/pid`, '2147483646');
    (await acquireHostLock(`unit-dead-${process.pid}`, 2_000))();
    expect(existsSync(dir)).toBe(false);
  });

  it('takes several in one order and gives them all back, also when one cannot be had', async () => {
    const [a, b] = [`unit-a-${process.pid}`, `unit-b-${process.pid}`];
    const lock = (n: string) => `/tmp/kvts-test-${n}.lock`;
    const held = await acquireHostLock(b, 1_000);
    // a is taken first (the order), then b times out: a is given back.
    await expect(acquireHostLocks([b, a], 600, [a, b])).rejects.toThrow(`host lock ${b}`);
    expect(existsSync(lock(a))).toBe(false);
    held();
    const both = await acquireHostLocks([b, a], 1_000, [a, b]);
    expect([existsSync(lock(a)), existsSync(lock(b))]).toEqual([true, true]);
    both();
    expect([existsSync(lock(a)), existsSync(lock(b))]).toEqual([false, false]);
    await expect(acquireHostLocks(['nope'], 100, [a])).rejects.toThrow(
      'host locks nope: not in the lock order',
    );
  });
});
