import { describe, expect, it } from 'vitest';
import {
  type ApiError,
  BadRequestError,
  formatLabelSelector,
  jsonPatch,
  mergePatch,
  parseFieldSelector,
  parseLabelSelector,
} from '../../../src/controllers/runtime';

describe('label selectors', () => {
  it('matches equality, set-based and existence requirements', () => {
    const s = parseLabelSelector('app=web, tier in (a, b),env!=prod,!legacy,owner');
    expect(s.matches({ app: 'web', tier: 'a', owner: 'x' })).toBe(true);
    expect(s.matches({ app: 'web', tier: 'a', owner: 'x', env: 'prod' })).toBe(false);
    expect(s.matches({ app: 'web', tier: 'c', owner: 'x' })).toBe(false);
    expect(s.matches({ app: 'web', tier: 'a', owner: 'x', legacy: '' })).toBe(false);
    expect(s.matches({ app: 'web', tier: 'a' })).toBe(false);
    expect(parseLabelSelector('').matches(undefined)).toBe(true);
    expect(parseLabelSelector('x notin (1,2)').matches({})).toBe(true);
  });

  it('rejects bad syntax with a BadRequest naming the selector', () => {
    expect(() => parseLabelSelector('a in (')).toThrow(BadRequestError);
    expect(() => parseLabelSelector('bad key=1')).toThrow(/invalid label selector "bad key=1"/);
    expect(() => parseLabelSelector('a=b c')).toThrow(BadRequestError);
  });

  it('formats structured selectors into the string syntax', () => {
    const str = formatLabelSelector({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['a', 'b'] },
        { key: 'old', operator: 'DoesNotExist' },
      ],
    });
    expect(str).toBe('app=web,tier in (a,b),!old');
    expect(parseLabelSelector(str).matches({ app: 'web', tier: 'b' })).toBe(true);
  });
});

describe('field selectors', () => {
  it('matches dotted paths with =, == and !=', () => {
    const obj = { metadata: { name: 'n', namespace: 'ns' }, status: { phase: 'Running' } };
    expect(parseFieldSelector('metadata.name=n,status.phase==Running').matches(obj)).toBe(true);
    expect(parseFieldSelector('status.phase!=Running').matches(obj)).toBe(false);
    expect(parseFieldSelector('spec.nodeName=').matches(obj)).toBe(true);
    expect(() => parseFieldSelector('metadata.name in (a)')).toThrow(BadRequestError);
  });
});

describe('patches', () => {
  it('merge patch: recursive maps, null deletes, arrays replace, inputs untouched', () => {
    const doc = { a: { b: 1, c: 2 }, l: [1, 2] };
    expect(mergePatch(doc, { a: { b: null, d: 3 }, l: [9] })).toEqual({ a: { c: 2, d: 3 }, l: [9] });
    expect(doc).toEqual({ a: { b: 1, c: 2 }, l: [1, 2] });
  });

  it('JSON patch: all six operations and escaped pointers', () => {
    const doc = { 'a/b': 1, 'm~n': 2, list: [1, 2, 3], obj: { x: 1 } };
    const out = jsonPatch(doc, [
      { op: 'test', path: '/a~1b', value: 1 },
      { op: 'replace', path: '/m~0n', value: 3 },
      { op: 'add', path: '/list/1', value: 9 },
      { op: 'remove', path: '/list/0' },
      { op: 'copy', from: '/obj', path: '/copy' },
      { op: 'move', from: '/obj/x', path: '/moved' },
      { op: 'add', path: '/list/-', value: 4 },
    ]);
    expect(out).toEqual({ 'a/b': 1, 'm~n': 3, list: [9, 2, 3, 4], obj: {}, copy: { x: 1 }, moved: 1 });
    expect(doc.list).toEqual([1, 2, 3]);
  });

  it('JSON patch: failing test, missing path and bad index are 422; malformed ops are 400', () => {
    const doc = { a: 1, l: [1] };
    const code = (ops: unknown) => {
      try {
        jsonPatch(doc, ops as never);
        return 0;
      } catch (err) {
        return (err as ApiError).code;
      }
    };
    expect(code([{ op: 'test', path: '/a', value: 2 }])).toBe(422);
    // As the API server (evanphx json-patch v4): a missing member of an existing object tests as null.
    expect(code([{ op: 'test', path: '/nope', value: null }])).toBe(0);
    expect(
      jsonPatch(doc, [
        { op: 'test', path: '/nope', value: null },
        { op: 'add', path: '/nope', value: {} },
      ]),
    ).toEqual({ ...doc, nope: {} });
    expect(code([{ op: 'test', path: '/nope', value: 1 }])).toBe(422);
    expect(code([{ op: 'test', path: '/nope/deeper', value: null }])).toBe(422);
    expect(code([{ op: 'remove', path: '/nope' }])).toBe(422);
    expect(code([{ op: 'replace', path: '/l/5', value: 1 }])).toBe(422);
    expect(code([{ op: 'frobnicate', path: '/a' }])).toBe(400);
    expect(code({ op: 'add' })).toBe(400);
    expect(code([{ op: 'add', path: 'a', value: 1 }])).toBe(400);
  });
});
