/**
 * Quantities: every quantity field is checked before defaulting reads it, so admission
 * answers a malformed one with a field error (whatever the rollout strategy), never an
 * exception, and a VM template cannot carry one to the VM controller.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { quantityProblem } from '../../../src/api/config/quantity';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { fixture as example } from '../../support/fixtures';

const configs = [
  createClusterConfig({}, { hostArchitecture: 'amd64' }),
  createClusterConfig({ vmRolloutStrategy: 'LiveUpdate' }, { hostArchitecture: 'amd64' }),
  createClusterConfig({ vmRolloutStrategy: 'Stage' }, { hostArchitecture: 'amd64' }),
];
const bad: unknown[] = [
  '1e400',
  ' 1Gi',
  '1Gi ',
  '1 Gi',
  '',
  '1..2',
  '-1',
  -1,
  'Infinity',
  Number.POSITIVE_INFINITY,
  'lots',
  {},
];

describe('quantityProblem', () => {
  it('accepts what the API server stores', () => {
    for (const q of ['1Gi', '128Mi', '0', '1.5', '100m', '2e3', 1, 0.5, '9223372036854775807']) {
      expect([q, quantityProblem(q)]).toEqual([q, undefined]);
    }
  });
  it('refuses malformed, spaced, negative, infinite and out-of-int64 values', () => {
    for (const q of [...bad, '9223372036854775808', '8Ei'])
      expect([q, quantityProblem(q)]).not.toEqual([q, undefined]);
  });
});

describe('admission of malformed quantities', () => {
  const at = (errors: { path: string }[], path: string) => errors.some((e) => e.path === path);

  it('memory.guest: a field error under every rollout strategy, never a throw', () => {
    for (const config of configs) {
      for (const q of bad) {
        const vmi = example<VirtualMachineInstance>('vmi-containerdisk.yaml');
        vmi.spec.domain.memory = { guest: q as string };
        const { errors } = admit(vmi as never, config);
        expect([q, at(errors, 'spec.domain.memory.guest')]).toEqual([q, true]);

        const vm = example<VirtualMachine>('vm-containerdisk.yaml');
        vm.spec.template!.spec!.domain.memory = { guest: q as string };
        const r = admit(vm as never, config);
        expect([q, at(r.errors, 'spec.template.spec.domain.memory.guest')]).toEqual([q, true]);
      }
    }
  });

  it('emptyDisk and hostDisk capacities', () => {
    for (const q of bad) {
      const vmi = example<VirtualMachineInstance>('vmi-containerdisk.yaml');
      vmi.spec.volumes!.push(
        { name: 'e', emptyDisk: { capacity: q as string } },
        { name: 'h', hostDisk: { path: '/var/h.img', type: 'DiskOrCreate', capacity: q as string } },
      );
      const n = vmi.spec.volumes!.length;
      const { errors } = admit(vmi as never, configs[1]);
      expect([q, at(errors, `spec.volumes[${n - 2}].emptyDisk.capacity`)]).toEqual([q, true]);
      expect([q, at(errors, `spec.volumes[${n - 1}].hostDisk.capacity`)]).toEqual([q, true]);
    }
  });

  it('resource requests: malformed ones by the schema, negative ones by the VMI rules', () => {
    for (const q of bad) {
      const vmi = example<VirtualMachineInstance>('vmi-containerdisk.yaml');
      vmi.spec.domain.resources = { requests: { memory: q as string } };
      const { errors } = admit(vmi as never, configs[1]);
      expect([
        q,
        errors.some((e) => /^spec\.domain\.resources\.requests(\[memory\]|\.memory)$/.test(e.path)),
      ]).toEqual([q, true]);
    }
  });

  it('DataVolume template storage sizes', () => {
    for (const q of bad) {
      const vm = example<VirtualMachine>('vm-datavolume.yaml');
      const dv = vm.spec.dataVolumeTemplates![0].spec as {
        storage?: { resources?: { requests?: Record<string, unknown> } };
        pvc?: { resources?: { requests?: Record<string, unknown> } };
      };
      const res = (dv.storage ?? dv.pvc)!.resources!;
      res.requests = { storage: q };
      const { errors } = admit(vm as never, configs[0]);
      expect([
        q,
        errors.some((e) =>
          /dataVolumeTemplates?\[0\]\.(spec\.)?(storage|pvc)\.resources\.requests/.test(e.path),
        ),
      ]).toEqual([q, true]);
    }
  });
});
