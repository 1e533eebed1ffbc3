import { describe, expect, it } from 'vitest';
import { cloneJson } from '../../src/api/json-clone';

describe('cloneJson', () => {
  it('copies nested objects and arrays deeply, keeping every value', () => {
    const v = { a: [1, { b: 'x', c: null }, [true]], d: { e: 0, f: undefined } };
    const c = cloneJson(v);
    expect(c).toStrictEqual(v);
    expect(c.a).not.toBe(v.a);
    expect(c.a[1]).not.toBe(v.a[1]);
    expect(c.d).not.toBe(v.d);
    (c.a[1] as { b: string }).b = 'changed';
    expect((v.a[1] as { b: string }).b).toBe('x');
  });

  it('keeps a decoded __proto__ key as data, not as the copy prototype', () => {
    const v = JSON.parse('{"__proto__": {"polluted": true}, "k": 1}') as Record<string, unknown>;
    const c = cloneJson(v);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect((c as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.keys(c)).toEqual(['__proto__', 'k']);
    expect(JSON.stringify(c)).toBe('{"__proto__":{"polluted":true},"k":1}');
  });

  it('returns scalars as they are', () => {
    expect(cloneJson('s')).toBe('s');
    expect(cloneJson(3)).toBe(3);
    expect(cloneJson(null)).toBe(null);
  });
});
