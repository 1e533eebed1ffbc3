/** Go's duration text as metav1.Duration writes it (`5m0s`), parsed as time.ParseDuration does. */
import { describe, expect, it } from 'vitest';
import { parseGoDuration } from '../../../src/controllers/common/go-duration';

describe('parseGoDuration', () => {
  it('reads what Go writes and what people type', () => {
    expect(parseGoDuration('5m0s', 'f')).toBe(300_000);
    expect(parseGoDuration('1h30m', 'f')).toBe(5_400_000);
    expect(parseGoDuration('1.5h', 'f')).toBe(5_400_000);
    expect(parseGoDuration('300ms', 'f')).toBe(300);
    expect(parseGoDuration('0', 'f')).toBe(0);
    expect(parseGoDuration('0s', 'f')).toBe(0);
    expect(parseGoDuration('-2s', 'f')).toBe(-2000);
    expect(parseGoDuration('1µs', 'f')).toBe(0.001);
  });

  it('refuses what Go refuses, naming the field', () => {
    for (const bad of ['', '5', '5 m', 'm5', '1d', '1h-5m', 'five']) {
      expect(() => parseGoDuration(bad, 'unfreezeTimeout')).toThrow(/^unfreezeTimeout: .* is not a duration/);
    }
    expect(() => parseGoDuration(300, 'unfreezeTimeout')).toThrow(
      'unfreezeTimeout: 300 is not a duration string',
    );
  });
});
