import { describe, expect, it } from 'vitest';
import {
  compareQuantities,
  formatQuantity,
  isValidQuantity,
  quantityMilliValue,
  quantityValue,
} from '../../../src/api/config/quantity';

describe('quantities', () => {
  it.each([
    ['128Mi', 134217728],
    ['1024M', 1024000000],
    ['2Gi', 2147483648],
    ['1.5', 2],
    ['100m', 1],
    ['2e3', 2000],
    [4, 4],
  ])('%s has value %d (rounded up like Go)', (q, v) => {
    expect(quantityValue(q)).toBe(v);
  });

  it('computes exact millivalues without float drift', () => {
    expect(quantityMilliValue('0.1')).toBe(100);
    expect(quantityMilliValue('100m')).toBe(100);
    expect(quantityMilliValue('1.5')).toBe(1500);
  });

  it('rejects text that is not a quantity', () => {
    expect(isValidQuantity('12 apples')).toBe(false);
    expect(isValidQuantity('1Gb')).toBe(false);
    expect(isValidQuantity('64Mi')).toBe(true);
    expect(quantityValue('garbage')).toBe(0);
  });

  it('compares across suffix families', () => {
    expect(compareQuantities('1Gi', '1G')).toBe(1);
    expect(compareQuantities('1000M', '1G')).toBe(0);
    expect(compareQuantities('999k', '1M')).toBe(-1);
  });

  it('formats canonically', () => {
    expect(formatQuantity(134217728)).toBe('128Mi');
    expect(formatQuantity(1000, 'DecimalSI')).toBe('1k');
    expect(formatQuantity(1000)).toBe('1000');
  });
});
