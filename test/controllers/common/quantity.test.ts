import { describe, expect, it } from 'vitest';
import {
  formatBytes,
  formatMilliCPU,
  parseQuantity,
  QuantityError,
  quantityMilliValue,
  quantityScaledValue,
  quantityValue,
} from '../../../src/controllers/common/quantity';

describe('parseQuantity / quantityValue', () => {
  it.each([
    ['1Gi', 1073741824n],
    ['1.5Gi', 1610612736n],
    ['128Mi', 134217728n],
    ['1G', 1000000000n],
    ['1500M', 1500000000n],
    ['2e3', 2000n],
    ['2E3', 2000n],
    ['500m', 1n], // rounds up
    ['0.1', 1n],
    ['3', 3n],
    ['12k', 12000n],
    ['1Ki', 1024n],
    ['.5Ki', 512n],
  ])('%s -> %s', (s, v) => {
    expect(quantityValue(parseQuantity(s))).toBe(v);
  });

  it('milli values round up', () => {
    expect(quantityMilliValue(parseQuantity('500m'))).toBe(500n);
    expect(quantityMilliValue(parseQuantity('1.2'))).toBe(1200n);
    expect(quantityMilliValue(parseQuantity('0.0001'))).toBe(1n);
  });

  it('ScaledValue(kilo) is ceil(q / 1000)', () => {
    expect(quantityScaledValue(parseQuantity('1Gi'), 3)).toBe(1073742n);
    expect(quantityScaledValue(parseQuantity('1G'), 3)).toBe(1000000n);
  });

  it.each(['', 'lots', '1Qi', '1 Gi', '--1', '1.2.3'])('rejects %j with the field name', (s) => {
    expect(() => parseQuantity(s, 'spec.x')).toThrow(QuantityError);
    expect(() => parseQuantity(s, 'spec.x')).toThrow(/^spec\.x: invalid quantity/);
  });
});

describe('formatting', () => {
  it.each([
    [1073741824n, '1Gi'],
    [1610612736n, '1536Mi'],
    [1000n, '1000'],
    [2048n, '2Ki'],
    [0n, '0'],
  ])('formatBytes(%s) = %s', (b, s) => {
    expect(formatBytes(b)).toBe(s);
  });
  it.each([
    [100n, '100m'],
    [1000n, '1'],
    [1200n, '1200m'],
  ])('formatMilliCPU(%s) = %s', (m, s) => {
    expect(formatMilliCPU(m)).toBe(s);
  });
});
