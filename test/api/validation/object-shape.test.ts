/**
 * Admission of objects of the wrong shape (reported at their paths by the schema check,
 * before any defaulting) and a webhook rule behind that check.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { admit } from '../../../src/api/validation/admission';
import { validateVirtualMachine } from '../../../src/api/validation/vm';
import { fixture } from '../../support/fixtures';

// biome-ignore lint/suspicious/noExplicitAny: the tests break arbitrary fixture fields
type Obj = any;

describe('objects of the wrong shape', () => {
  const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });

  it('reports a list given as a string at its path, without defaulting', () => {
    const vmi = fixture<Obj>('vmi-containerdisk.yaml');
    vmi.spec.domain.devices.disks = 'containerdisk';
    const result = admit(vmi, cfg);
    expect(result.errors).toEqual([
      {
        path: 'spec.domain.devices.disks',
        message: 'expected array, got string "containerdisk"',
        type: 'FieldValueInvalid',
      },
    ]);
    expect(result.object).toBe(vmi);
  });

  it('reports a missing spec as a required field', () => {
    const vm = fixture<Obj>('vm-containerdisk.yaml');
    delete vm.spec;
    expect(admit(vm, cfg).errors).toEqual([
      { path: 'spec', message: 'Required value', type: 'FieldValueRequired' },
    ]);
  });

  it('reports a quantity given as an object', () => {
    const vmi = fixture<Obj>('vmi-containerdisk.yaml');
    vmi.spec.domain.memory.guest = { size: 128 };
    expect(admit(vmi, cfg).errors.map((e) => [e.path, e.message])).toEqual([
      ['spec.domain.memory.guest', 'expected integer or string, got object'],
    ]);
  });

  it('reports a malformed quantity string with its path', () => {
    const vmi = fixture<Obj>('vmi-containerdisk.yaml');
    vmi.spec.domain.memory.guest = '128 megs';
    expect(admit(vmi, cfg).errors.map((e) => [e.path, e.message])).toContainEqual([
      'spec.domain.memory.guest',
      "spec.domain.memory.guest '128 megs': quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ]);
  });
});

describe('webhook rules behind the schema check', () => {
  const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });

  it("validateVirtualMachine itself reports upstream's template message", () => {
    const vm = fixture<Obj>('vm-containerdisk.yaml');
    delete vm.spec.template;
    expect(validateVirtualMachine(vm, cfg)).toEqual([
      { path: 'spec.template', message: 'missing virtual machine template.', type: 'FieldValueRequired' },
    ]);
  });
});
