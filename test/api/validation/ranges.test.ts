/**
 * Integer ranges: values upstream's Go types refuse at decode (uint32, int32, int64) and
 * the vCPU cap are field errors at admission, never numbers in the domain.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/api/generated/types';
import { checkFields } from '../../../src/api/manifest/field-check';
import { admit } from '../../../src/api/validation/admission';
import { fixture as example } from '../../support/fixtures';

const config = createClusterConfig({}, { hostArchitecture: 'amd64' });

function vmiErrors(mutate: (v: VirtualMachineInstance) => void): { field: string; message: string }[] {
  const vmi = example<VirtualMachineInstance>('vmi-containerdisk.yaml');
  mutate(vmi);
  return admit(vmi as never, config).errors.map((e) => ({ field: e.path, message: e.message }));
}

describe('integer ranges of the API types', () => {
  const cases: [string, (v: VirtualMachineInstance) => void, string, RegExp][] = [
    [
      'cores 2^32',
      (v) => (v.spec.domain.cpu = { cores: 2 ** 32 }),
      'spec.domain.cpu.cores',
      /out of range for uint32/,
    ],
    [
      'sockets 1e21',
      (v) => (v.spec.domain.cpu = { sockets: 1e21 }),
      'spec.domain.cpu.sockets',
      /1e\+21 is out of range for uint32/,
    ],
    [
      'threads -1',
      (v) => (v.spec.domain.cpu = { threads: -1 }),
      'spec.domain.cpu.threads',
      /out of range for uint32/,
    ],
    [
      'maxSockets 2^32',
      (v) => (v.spec.domain.cpu = { maxSockets: 2 ** 32 }),
      'spec.domain.cpu.maxSockets',
      /uint32/,
    ],
    [
      'bootOrder 2^31',
      (v) => (v.spec.domain.devices.disks![0].bootOrder = 2 ** 31),
      'spec.domain.devices.disks[0].bootOrder',
      /out of range for int32/,
    ],
    [
      'grace period 2^63',
      (v) => (v.spec.terminationGracePeriodSeconds = 2 ** 63),
      'spec.terminationGracePeriodSeconds',
      /out of range for int64/,
    ],
  ];
  for (const [name, mutate, field, message] of cases) {
    it(`refuses ${name} with a field path`, () => {
      const errs = vmiErrors(mutate);
      expect(errs.find((e) => e.field === field)?.message).toMatch(message);
    });
  }

  it('accepts the edges of each range', () => {
    expect(vmiErrors((v) => (v.spec.terminationGracePeriodSeconds = 2 ** 53 - 1))).toEqual([]);
    expect(vmiErrors((v) => (v.spec.domain.devices.disks![0].bootOrder = 2 ** 31 - 1))).toEqual([]);
    const vm = {
      kind: 'VirtualMachine',
      spec: { template: { spec: { domain: { cpu: { cores: 2 ** 32 - 1 } } } } },
    };
    expect(checkFields(vm, 'VirtualMachine').filter((p) => p.code === 'out-of-range')).toEqual([]);
  });

  it('refuses replicas at 2^31 (int32)', () => {
    const rs = { kind: 'VirtualMachineInstanceReplicaSet', spec: { replicas: 2 ** 31 } };
    expect(
      checkFields(rs, 'VirtualMachineInstanceReplicaSet').map((p) => [p.code, p.path.join('.')]),
    ).toContainEqual(['out-of-range', 'spec.replicas']);
  });

  it('refuses out-of-range values in a VM template too', () => {
    const vm = example<VirtualMachine>('vm-containerdisk.yaml');
    vm.spec.template!.spec!.domain.cpu = { cores: 1e21 };
    const errs = admit(vm as never, config).errors;
    expect(errs.map((e) => e.path)).toContain('spec.template.spec.domain.cpu.cores');
  });
});

describe('the vCPU cap', () => {
  it('refuses a topology over 512 vCPUs', () => {
    const errs = vmiErrors((v) => (v.spec.domain.cpu = { cores: 64, sockets: 16 }));
    expect(errs).toContainEqual({
      field: 'spec.domain.cpu',
      message: 'sockets * cores * threads (1024) exceeds the maximum of 512 vCPUs',
    });
  });
  it('refuses a maxSockets that could hotplug past 512 vCPUs', () => {
    const errs = vmiErrors((v) => (v.spec.domain.cpu = { cores: 4, sockets: 1, maxSockets: 1_000_000 }));
    expect(errs).toContainEqual({
      field: 'spec.domain.cpu.maxSockets',
      message: 'maxSockets * cores * threads (4000000) exceeds the maximum of 512 vCPUs',
    });
  });
  it('accepts exactly 512', () => {
    expect(vmiErrors((v) => (v.spec.domain.cpu = { cores: 4, sockets: 2, maxSockets: 128 }))).toEqual([]);
  });
});
