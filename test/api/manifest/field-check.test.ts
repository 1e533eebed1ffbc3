import { describe, expect, it } from 'vitest';
import { checkFields, formatFieldPath } from '../../../src/api/manifest';

describe('formatFieldPath', () => {
  it('formats properties, indexes and map keys like upstream field paths', () => {
    expect(formatFieldPath(['spec', 'domain', 'devices', 'disks', 1, 'name'])).toBe(
      'spec.domain.devices.disks[1].name',
    );
    expect(formatFieldPath(['metadata', 'labels', 'kubevirt.io/os'], [2])).toBe(
      'metadata.labels[kubevirt.io/os]',
    );
    expect(formatFieldPath(['metadata', 'labels', 'a]b'], [2])).toBe('metadata.labels["a]b"]');
    expect(formatFieldPath(['spec', 'x.y\n'])).toBe('spec["x.y\\n"]');
  });
});

describe('checkFields', () => {
  it('accepts int-or-string quantities as numbers or strings, and null as absent', () => {
    const vmi = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'a', creationTimestamp: null },
      spec: {
        domain: { devices: {}, memory: { guest: 134217728 }, resources: { requests: { memory: '128Mi' } } },
      },
    };
    expect(checkFields(vmi, 'VirtualMachineInstance')).toEqual([]);
  });

  it('reports each problem with its segments', () => {
    const vmi = {
      spec: {
        domain: { devices: { disks: [{ name: 'd', bootOrder: 1.5 }], autoattachSerialConsole: 'sure' } },
        volumes: {},
        extra: true,
      },
    };
    expect(
      checkFields(vmi, 'VirtualMachineInstance').map((p) => [p.code, formatFieldPath(p.path), p.detail]),
    ).toEqual([
      // In the object's own key order, as a reader meets them.
      ['wrong-type', 'spec.domain.devices.disks[0].bootOrder', 'expected integer, got number 1.5'],
      ['wrong-type', 'spec.domain.devices.autoattachSerialConsole', 'expected boolean, got string "sure"'],
      ['wrong-type', 'spec.volumes', 'expected array, got object'],
      ['unknown-field', 'spec.extra', 'unknown field'],
    ]);
  });

  it('throws only for a type name that does not exist (a programming error)', () => {
    expect(() => checkFields({}, 'NoSuchType')).toThrow('no field schema for type NoSuchType');
  });
});
