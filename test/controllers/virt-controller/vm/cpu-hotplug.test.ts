/**
 * CPU hotplug's decision in the VM controller (upstream handleCPUChangeRequest): the
 * patch that raises a running VMI's sockets, the restart reasons for what cannot go live,
 * the waits, and the RestartRequired comparison that leaves the live CPU fields out.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import { cpuChange, withoutLiveCpu } from '../../../../src/controllers/virt-controller/vm/cpu-hotplug';

const vmi = (cpu: object, status: object = {}, extra: object = {}): VirtualMachineInstance =>
  ({
    spec: { domain: { devices: {}, cpu }, ...extra },
    status: { phase: 'Running', ...status },
  }) as unknown as VirtualMachineInstance;
const migratable = (status: 'True' | 'False', message?: string) => ({
  conditions: [{ type: 'LiveMigratable', status, reason: 'DisksNotLiveMigratable', message }],
});

describe('cpuChange', () => {
  it('raises the sockets with a tested JSON patch', () => {
    const live = vmi({ sockets: 1, cores: 1, maxSockets: 4 }, migratable('True'));
    const c = cpuChange(vmi({ sockets: 2, cores: 1 }), live);
    expect(c).toEqual({
      patch: [
        { op: 'test', path: '/spec/domain/cpu/sockets', value: 1 },
        { op: 'replace', path: '/spec/domain/cpu/sockets', value: 2 },
      ],
    });
    expect(cpuChange(vmi({ sockets: 3 }), vmi({ sockets: 3, maxSockets: 4 }))).toEqual({});
  });

  it('needs a restart past maxSockets, for fewer sockets, on arm64, and for a VMI that cannot migrate', () => {
    expect(cpuChange(vmi({ sockets: 5 }), vmi({ sockets: 1, maxSockets: 4 })).restart).toBe(
      "CPU sockets updated in template spec to a value higher than what's available",
    );
    // No headroom at all: the VMI started without LiveUpdate.
    expect(cpuChange(vmi({ sockets: 2 }), vmi({ sockets: 1 })).restart).toMatch(
      /higher than what's available/,
    );
    expect(cpuChange(vmi({ sockets: 1 }), vmi({ sockets: 2, maxSockets: 8 })).restart).toBe(
      'Reduction of CPU socket count requires a restart',
    );
    expect(
      cpuChange(vmi({ sockets: 2 }), vmi({ sockets: 1, maxSockets: 4 }, {}, { architecture: 'arm64' }))
        .restart,
    ).toBe("ARM doesn't support CPU hotplug");
    const stuck = vmi(
      { sockets: 1, maxSockets: 4 },
      migratable('False', 'cannot migrate VMI: PVC x is not shared'),
    );
    expect(cpuChange(vmi({ sockets: 2 }), stuck).restart).toBe(
      'CPU hotplug needs a live migration and the VMI is not live-migratable: cannot migrate VMI: PVC x is not shared',
    );
  });

  it('waits for LiveMigratable, and while another hotplug or a migration is in progress', () => {
    expect(cpuChange(vmi({ sockets: 2 }), vmi({ sockets: 1, maxSockets: 4 }))).toEqual({
      wait: "the VMI's LiveMigratable condition is not reported yet",
    });
    const busy = vmi(
      { sockets: 2, maxSockets: 4 },
      {
        conditions: [
          { type: 'LiveMigratable', status: 'True' },
          { type: 'HotVCPUChange', status: 'True' },
        ],
      },
    );
    expect(cpuChange(vmi({ sockets: 3 }), busy)).toEqual({ wait: 'another CPU hotplug is in progress' });
    const moving = vmi(
      { sockets: 1, maxSockets: 4 },
      { ...migratable('True'), migrationState: { startTimestamp: '2026-12-04T21:00:00Z' } },
    );
    expect(cpuChange(vmi({ sockets: 2 }), moving)).toEqual({
      wait: 'CPU hotplug is not allowed while VMI is migrating',
    });
  });
});

describe('withoutLiveCpu', () => {
  const vm = (cpu: object) =>
    ({ spec: { template: { spec: { domain: { cpu } } } } }) as unknown as VirtualMachine;

  it("takes the running VMI's sockets and defaulted maxSockets for the restart comparison", () => {
    const wanted = vmi({ sockets: 2, maxSockets: 8, cores: 1 });
    const live = vmi({ sockets: 1, maxSockets: 4, cores: 1 });
    expect(withoutLiveCpu(vm({ sockets: 2 }), wanted, live).spec.domain.cpu).toEqual({
      sockets: 1,
      maxSockets: 4,
      cores: 1,
    });
  });

  it('keeps a maxSockets the template sets (changing it needs a restart)', () => {
    const wanted = vmi({ sockets: 2, maxSockets: 6 });
    const live = vmi({ sockets: 1, maxSockets: 4 });
    expect(withoutLiveCpu(vm({ sockets: 2, maxSockets: 6 }), wanted, live).spec.domain.cpu?.maxSockets).toBe(
      6,
    );
  });
});
