/**
 * The handler's kill-or-shutdown decision for a deleted VMI (upstream's
 * hasGracePeriodExpired): 0 kills at once, the grace period counts from the first
 * signal, and a shorter grace period given later shortens what is left.
 */
import { describe, expect, it } from 'vitest';
import { ShutdownClock } from '../../../src/controllers/virt-handler/shutdown-clock';

describe('ShutdownClock', () => {
  it('kills at once when the grace period is 0', () => {
    expect(new ShutdownClock(() => 0).next('u', 0)).toEqual({ kill: true });
  });

  it('counts the grace period from the first signal, then kills', () => {
    let now = 1_000_000;
    const c = new ShutdownClock(() => now);
    expect(c.next('u', 180)).toEqual({ kill: false, secondsLeft: 180 });
    now += 100_000;
    expect(c.next('u', 180)).toEqual({ kill: false, secondsLeft: 80 });
    now += 80_000;
    expect(c.next('u', 180)).toEqual({ kill: true });
  });

  it('a shorter grace period during the shutdown shortens it', () => {
    let now = 0;
    const c = new ShutdownClock(() => now);
    expect(c.next('u', 180)).toEqual({ kill: false, secondsLeft: 180 });
    now += 5_000;
    expect(c.next('u', 10)).toEqual({ kill: false, secondsLeft: 5 });
    expect(c.next('u', 0)).toEqual({ kill: true });
  });

  it('forgets a VMI', () => {
    let now = 0;
    const c = new ShutdownClock(() => now);
    c.next('u', 10);
    now += 20_000;
    c.forget('u');
    expect(c.next('u', 10)).toEqual({ kill: false, secondsLeft: 10 });
  });
});
