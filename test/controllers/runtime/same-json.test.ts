import { describe, expect, it } from 'vitest';
import { sameJson } from '../../../src/controllers/runtime/same-json';

describe('sameJson', () => {
  it('ignores key order, as the API server returns a custom resource sorted', () => {
    const computed = {
      type: 'Ready',
      status: 'True',
      lastTransitionTime: '2026-12-01T00:00:00Z',
      lastProbeTime: null,
    };
    const stored = JSON.parse(JSON.stringify(computed, Object.keys(computed).sort()));
    expect(JSON.stringify(computed)).not.toBe(JSON.stringify(stored));
    expect(
      sameJson({ conditions: [computed], phase: 'Running' }, { phase: 'Running', conditions: [stored] }),
    ).toBe(true);
  });

  it('treats an undefined key as absent, as JSON does', () => {
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(true);
    expect(sameJson(undefined, undefined)).toBe(true);
    expect(sameJson([undefined], [null])).toBe(true);
  });

  it('sees every real difference', () => {
    expect(sameJson({ a: 1 }, { a: 2 })).toBe(false);
    expect(sameJson({ a: 1 }, { b: 1 })).toBe(false);
    expect(sameJson({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(sameJson({ a: undefined, b: 1 }, { a: 1, b: 1 })).toBe(false);
    expect(sameJson([1, 2], [2, 1])).toBe(false); // arrays keep their order
    expect(sameJson([1], [1, 2])).toBe(false);
    expect(sameJson({ a: [] }, { a: {} })).toBe(false);
    expect(sameJson({}, null)).toBe(false);
    expect(sameJson(undefined, null)).toBe(false);
    expect(sameJson('1', 1)).toBe(false);
    expect(sameJson({ a: { b: { c: 'x' } } }, { a: { b: { c: 'y' } } })).toBe(false);
  });

  it('compares own keys: a "__proto__" or "constructor" key is a key like any other', () => {
    // JSON.parse makes `__proto__` an own key; read through the prototype chain on the other
    // side it was Object.prototype, which has no keys: equal to `{}`.
    expect(sameJson(JSON.parse('{"__proto__":{}}'), { volumes: [] })).toBe(false);
    expect(sameJson({ volumes: [] }, JSON.parse('{"__proto__":{}}'))).toBe(false);
    expect(sameJson({ constructor: {} }, { other: {} })).toBe(false);
    expect(sameJson(JSON.parse('{"__proto__":{"a":1}}'), JSON.parse('{"__proto__":{"a":1}}'))).toBe(true);
  });
});
