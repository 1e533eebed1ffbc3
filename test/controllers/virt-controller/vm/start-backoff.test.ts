import { describe, expect, it } from 'vitest';
import {
  backoffSecondsLeft,
  nextStartFailure,
  startBackoffSeconds,
} from '../../../../src/controllers/virt-controller/vm/start-backoff';

const noJitter = () => 0;
const maxJitter = (n: number) => n - 1;

describe('startBackoffSeconds (upstream calculateStartBackoffTime, maxDelay 300)', () => {
  // interval = max(10, 300/30) = 10; delay = 10 * n^2 + rand[0, delay/2]; capped at 300
  it.each([
    [0, 10, 15], // failCount <= 0 counts as 1: 10 .. 10 + 5
    [1, 10, 15],
    [2, 40, 60],
    [3, 90, 135],
    [4, 160, 240],
    [5, 250, 300], // 250 + 125 capped at 300
    [6, 300, 300], // 360 capped
  ])('failCount %i: %i..%i s', (n, min, max) => {
    expect(startBackoffSeconds(n, 300, noJitter)).toBe(min);
    expect(startBackoffSeconds(n, 300, maxJitter)).toBe(max);
  });
  it('uses maxDelay/30 as the interval when larger than 10', () => {
    // maxDelay 900: interval 30; failCount 2 -> 120
    expect(startBackoffSeconds(2, 900, noJitter)).toBe(120);
  });
  it('stays within bounds with real randomness', () => {
    for (let i = 0; i < 200; i++) {
      const d = startBackoffSeconds(2);
      expect(d).toBeGreaterThanOrEqual(40);
      expect(d).toBeLessThanOrEqual(60);
    }
  });
});

describe('nextStartFailure (upstream syncStartFailureStatus)', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  it('records the first early failure with its retry time', () => {
    const f = nextStartFailure(
      undefined,
      'Always',
      { uid: 'a', phase: 'Failed', everRunning: false },
      now,
      noJitter,
    );
    expect(f).toEqual({
      consecutiveFailCount: 1,
      lastFailedVMIUID: 'a',
      retryAfterTimestamp: '2026-01-01T00:00:10Z',
    });
    expect(backoffSecondsLeft(f, now)).toBe(10);
    expect(backoffSecondsLeft(f, new Date('2026-01-01T00:00:11Z'))).toBe(0);
  });
  it('counts a failure once per VMI and grows with the next one', () => {
    const f1 = nextStartFailure(
      undefined,
      'Always',
      { uid: 'a', phase: 'Failed', everRunning: false },
      now,
      noJitter,
    );
    expect(
      nextStartFailure(f1, 'Always', { uid: 'a', phase: 'Failed', everRunning: false }, now, noJitter),
    ).toBe(f1);
    const f2 = nextStartFailure(
      f1,
      'Always',
      { uid: 'b', phase: 'Failed', everRunning: false },
      now,
      noJitter,
    );
    expect(f2).toEqual({
      consecutiveFailCount: 2,
      lastFailedVMIUID: 'b',
      retryAfterTimestamp: '2026-01-01T00:00:40Z',
    });
  });
  it('clears once a VMI ran, or for strategies that do not restart', () => {
    const f1 = { consecutiveFailCount: 3, lastFailedVMIUID: 'a' };
    expect(
      nextStartFailure(f1, 'Always', { uid: 'c', phase: 'Running', everRunning: true }, now),
    ).toBeUndefined();
    expect(
      nextStartFailure(f1, 'Manual', { uid: 'c', phase: 'Failed', everRunning: false }, now),
    ).toBeUndefined();
    expect(nextStartFailure(f1, 'Always', undefined, now)).toBe(f1);
  });
});
