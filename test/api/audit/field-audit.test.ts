/**
 * The field audit: every leaf field of the VirtualMachineInstance spec, the VirtualMachine
 * spec outside its template and the DataVolume spec of its dataVolumeTemplates (from the
 * generated schema) either takes effect (its registry entry names a test that covers it)
 * or is refused by validation with the registry's reason. docs/unsupported-fields.md is
 * generated from the same registry and must be up to date.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderUnsupportedFieldsDoc } from '../../../scripts/gen-unsupported-fields';
import { validateDataVolume } from '../../../src/api/cdi/validate-datavolume';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { defaultVirtualMachineInstance } from '../../../src/api/defaults/vmi-defaults';
import type { FieldError } from '../../../src/api/errors';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/api/generated/types';
import {
  dataVolumeFieldSupport,
  type FieldRegistry,
  isRefused,
  patternCovers,
  patternField,
  patternSegments,
  vmFieldSupport,
  vmiFieldSupport,
} from '../../../src/api/validation/field-support';
import { validateVirtualMachine } from '../../../src/api/validation/vm';
import { validateVirtualMachineInstance } from '../../../src/api/validation/vmi';
import { schemaLeaves, setLeaf } from './schema-leaves';

const root = join(import.meta.dirname, '..', '..', '..');
const config = createClusterConfig({}, { hostArchitecture: 'amd64' });
const clone = <T>(v: T): T => structuredClone(v);

const vmiSpec = (): VirtualMachineInstance['spec'] => ({
  domain: {
    resources: { requests: { memory: '128Mi' } },
    devices: {
      disks: [{ name: 'disk0', disk: { bus: 'virtio' } }],
      interfaces: [{ name: 'default', masquerade: {} }],
    },
  },
  networks: [{ name: 'default', pod: {} }],
  volumes: [{ name: 'disk0', containerDisk: { image: 'kubevirt-ts/tiny-guest' } }],
});
const baseVmi = (): VirtualMachineInstance =>
  defaultVirtualMachineInstance(
    {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'a', namespace: 'd' },
      spec: vmiSpec(),
    },
    config,
  );
const baseVm = (): VirtualMachine => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'a', namespace: 'd' },
  spec: { runStrategy: 'Halted', template: { spec: vmiSpec() } },
});
const dvSpec = () => ({ source: { blank: {} }, storage: { resources: { requests: { storage: '1Gi' } } } });

/** The root types, their registries and leaves. */
const roots = [
  {
    name: 'VirtualMachineInstanceSpec',
    registry: vmiFieldSupport,
    leaves: schemaLeaves('VirtualMachineInstanceSpec'),
  },
  {
    name: 'VirtualMachineSpec',
    registry: vmFieldSupport,
    leaves: schemaLeaves('VirtualMachineSpec', ['template', 'dataVolumeTemplates[*].spec']),
  },
  { name: 'DataVolumeSpec', registry: dataVolumeFieldSupport, leaves: schemaLeaves('DataVolumeSpec') },
] as const;

/** The concrete path the validator names for `pattern`'s field under `prefix`. */
function concrete(prefix: string, pattern: string): string {
  return `${prefix}.${patternField(pattern)}`.replace(/\[\*\]/g, '[0]').replace(/\.\*(?=[.[]|$)/g, '[k]');
}

function expectRefusal(errs: FieldError[], path: string, reason: string): void {
  const named = errs.filter((e) => e.path === path);
  expect(
    named.map((e) => e.message).join('\n'),
    `no error at ${path}; got ${JSON.stringify(errs)}`,
  ).toContain(reason);
}

describe('field audit: every schema leaf is in the registry', () => {
  for (const r of roots) {
    it(`${r.name}: each of its ${r.leaves.length} leaves matches exactly one entry`, () => {
      const problems: string[] = [];
      for (const leaf of r.leaves) {
        const matches = Object.keys(r.registry).filter((p) => patternCovers(p, leaf));
        if (matches.length !== 1)
          problems.push(`${leaf}: ${matches.length ? matches.join(', ') : 'no entry'}`);
      }
      expect(problems).toEqual([]);
    });

    it(`${r.name}: every entry covers a schema leaf`, () => {
      const stale = Object.keys(r.registry).filter((p) => !r.leaves.some((l) => patternCovers(p, l)));
      expect(stale).toEqual([]);
    });
  }
});

describe('field audit: effect entries name a test that mentions the field', () => {
  for (const r of roots) {
    it(r.name, () => {
      const problems: string[] = [];
      for (const [pattern, s] of Object.entries(r.registry)) {
        if (isRefused(s)) continue;
        const file = join(root, s.effect);
        const word = patternSegments(patternField(pattern))
          .filter((x) => x !== '[*]' && x !== '*')
          .at(-1)!;
        if (!/^test\//.test(s.effect) || !existsSync(file))
          problems.push(`${pattern}: ${s.effect} does not exist`);
        else if (!new RegExp(`\\b${word}\\b`).test(readFileSync(file, 'utf8')))
          problems.push(`${pattern}: ${s.effect} does not mention ${word}`);
      }
      expect(problems).toEqual([]);
    });
  }
});

describe('field audit: refused entries are refused by validation with their reason', () => {
  it('the minimal objects the audit starts from are valid', () => {
    expect(validateVirtualMachineInstance(baseVmi(), config)).toEqual([]);
    expect(validateVirtualMachine(baseVm(), config)).toEqual([]);
    expect(validateDataVolume({ spec: dvSpec() } as never)).toEqual([]);
  });

  const refused = (registry: FieldRegistry) =>
    Object.entries(registry).flatMap(([p, s]) => (isRefused(s) ? [[p, s] as const] : []));
  const firstLeaf = (r: (typeof roots)[number], pattern: string) =>
    r.leaves.find((l) => patternCovers(pattern, l))!;

  for (const [pattern, s] of refused(vmiFieldSupport)) {
    it(`VMI and VM template: spec.${pattern}`, () => {
      const leaf = firstLeaf(roots[0], pattern);
      const vmi = baseVmi();
      setLeaf(vmi.spec as unknown as Record<string, unknown>, 'VirtualMachineInstanceSpec', leaf, s);
      expectRefusal(validateVirtualMachineInstance(vmi, config), concrete('spec', pattern), s.refused);
      const vm = baseVm();
      setLeaf(
        vm.spec.template.spec as unknown as Record<string, unknown>,
        'VirtualMachineInstanceSpec',
        leaf,
        s,
      );
      expectRefusal(validateVirtualMachine(vm, config), concrete('spec.template.spec', pattern), s.refused);
      if (!s.allowed?.length) return;
      // The accepted values pass: the refusal is of what kubevirt-ts does not do.
      for (const value of s.allowed) {
        const ok = baseVmi();
        setLeaf(ok.spec as unknown as Record<string, unknown>, 'VirtualMachineInstanceSpec', leaf, {
          example: value,
        });
        expect(
          validateVirtualMachineInstance(ok, config).filter((e) => e.message.includes(s.refused)),
        ).toEqual([]);
      }
    });
  }

  for (const [pattern, s] of refused(vmFieldSupport)) {
    it(`VM: spec.${pattern}`, () => {
      const vm = baseVm();
      setLeaf(
        vm.spec as unknown as Record<string, unknown>,
        'VirtualMachineSpec',
        firstLeaf(roots[1], pattern),
        s,
      );
      expectRefusal(validateVirtualMachine(vm, config), concrete('spec', pattern), s.refused);
    });
  }

  for (const [pattern, s] of refused(dataVolumeFieldSupport)) {
    it(`DataVolume and VM dataVolumeTemplates: spec.${pattern}`, () => {
      const spec: Record<string, unknown> = dvSpec();
      // One source and one target at a time: the field replaces the base's.
      if (pattern.startsWith('source.')) spec.source = {};
      if (pattern.startsWith('pvc.')) delete spec.storage;
      setLeaf(spec, 'DataVolumeSpec', firstLeaf(roots[2], pattern), s);
      expectRefusal(validateDataVolume({ spec } as never), concrete('spec', pattern), s.refused);
      const vm = baseVm();
      vm.spec.dataVolumeTemplates = [{ metadata: { name: 'dv' }, spec: clone(spec) as never }];
      vm.spec.template.spec!.volumes!.push({ name: 'dv', dataVolume: { name: 'dv' } });
      vm.spec.template.spec!.domain.devices.disks!.push({ name: 'dv', disk: { bus: 'virtio' } });
      expectRefusal(
        validateVirtualMachine(vm, config),
        concrete('spec.dataVolumeTemplates[0].spec', pattern),
        s.refused,
      );
    });
  }
});

describe('docs/unsupported-fields.md', () => {
  it('is what scripts/gen-unsupported-fields.ts generates from the registry', () => {
    expect(readFileSync(join(root, 'docs', 'unsupported-fields.md'), 'utf8')).toBe(
      renderUnsupportedFieldsDoc(),
    );
  });
});
