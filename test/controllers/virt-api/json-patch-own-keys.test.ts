/**
 * The mutators' patch diff looks at own keys only: `in` found `constructor` and `__proto__`
 * on every object, so a removed `constructor` key got no `remove` and an added one a
 * `replace` of a path that does not exist (which the API server's patch refuses).
 */
import { describe, expect, it } from 'vitest';
import { jsonPatch } from '../../../src/controllers/virt-api/json-patch';

describe('jsonPatch own keys', () => {
  it('removes and adds keys named like Object.prototype members', () => {
    expect(jsonPatch({ constructor: 1, toString: 'x' }, {})).toEqual([
      { op: 'remove', path: '/constructor' },
      { op: 'remove', path: '/toString' },
    ]);
    expect(jsonPatch({}, { constructor: 1 })).toEqual([{ op: 'add', path: '/constructor', value: 1 }]);
    const withProto = JSON.parse('{"__proto__":{"a":1}}');
    expect(jsonPatch({}, withProto)).toEqual([{ op: 'add', path: '/__proto__', value: { a: 1 } }]);
    expect(jsonPatch(withProto, {})).toEqual([{ op: 'remove', path: '/__proto__' }]);
  });
});
