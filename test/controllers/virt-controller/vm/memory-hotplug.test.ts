/**
 * Memory hotplug's decision in the VM controller (upstream handleMemoryHotplugRequest):
 * the patch that raises a running VMI's guest memory and its memory request, upstream's
 * restart reasons, the waits, and the RestartRequired comparison that leaves the live
 * memory fields (and the request as the hotplug grew it) out.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import {
  memoryChange,
  withoutLiveMemory,
} from '../../../../src/controllers/virt-controller/vm/memory-hotplug';

const live = (
  memory: object,
  request = '1Gi',
  conds: object[] = [{ type: 'LiveMigratable', status: 'True' }],
) =>
  ({
    spec: {
      architecture: 'amd64',
      domain: { devices: {}, memory, resources: { requests: { memory: request } } },
    },
    status: { phase: 'Running', conditions: conds, memory: { guestAtBoot: '1Gi', guestRequested: '1Gi' } },
  }) as unknown as VirtualMachineInstance;
const wanted = (guest: string) =>
  ({
    spec: { domain: { devices: {}, memory: { guest }, resources: { requests: { memory: '1Gi' } } } },
  }) as unknown as VirtualMachineInstance;

describe('memoryChange', () => {
  it('raises the guest memory and the memory request by as much, testing the old values', () => {
    expect(memoryChange(wanted('2Gi'), live({ guest: '1Gi', maxGuest: '4Gi' }))).toEqual({
      patch: [
        { op: 'test', path: '/spec/domain/memory/guest', value: '1Gi' },
        { op: 'replace', path: '/spec/domain/memory/guest', value: '2Gi' },
        { op: 'test', path: '/spec/domain/resources/requests/memory', value: '1Gi' },
        { op: 'replace', path: '/spec/domain/resources/requests/memory', value: '2Gi' },
      ],
    });
    expect(memoryChange(wanted('1024Mi'), live({ guest: '1Gi', maxGuest: '4Gi' }))).toEqual({});
  });

  it("restarts with upstream's reasons for what cannot go live", () => {
    const reason = (w: string, memory: object, conds?: object[]) =>
      memoryChange(wanted(w), live(memory, '1Gi', conds)).restart;
    expect(reason('5Gi', { guest: '1Gi', maxGuest: '4Gi' })).toBe(
      "memory updated in template spec to a value higher than what's available",
    );
    expect(reason('512Mi', { guest: '1Gi', maxGuest: '4Gi' })).toBe(
      'memory updated in template spec to a value lower than what the VM started with',
    );
    expect(reason('2Gi', { guest: '1Gi' })).toBe(
      'memory updated in template spec. Memory-hotplug is not available for this VM configuration',
    );
    expect(reason('2049Mi', { guest: '1Gi', maxGuest: '4Gi' })).toBe(
      'memory hotplug not supported, Guest memory must be 2Mi aligned',
    );
    expect(
      reason('2Gi', { guest: '1Gi', maxGuest: '4Gi' }, [{ type: 'LiveMigratable', status: 'False' }]),
    ).toBe('memory updated in template spec. Memory-hotplug is only available for migratable VMs');
  });

  it('waits for LiveMigratable and while another memory hotplug is in progress', () => {
    expect(memoryChange(wanted('2Gi'), live({ guest: '1Gi', maxGuest: '4Gi' }, '1Gi', [])).wait).toBe(
      "the VMI's LiveMigratable condition is not reported yet",
    );
    const busy = live({ guest: '2Gi', maxGuest: '4Gi' }, '2Gi', [
      { type: 'LiveMigratable', status: 'True' },
      { type: 'HotMemoryChange', status: 'True' },
    ]);
    expect(memoryChange(wanted('3Gi'), busy).wait).toBe('another memory hotplug is in progress');
  });
});

describe('withoutLiveMemory', () => {
  const vm = {
    spec: { template: { spec: { domain: { memory: { guest: '2Gi' } } } } },
  } as unknown as VirtualMachine;

  it("takes the running VMI's guest memory, defaulted maxGuest and grown request", () => {
    const w = wanted('2Gi');
    w.spec.domain.memory = { guest: '2Gi', maxGuest: '8Gi' };
    const hotplugged = live({ guest: '2Gi', maxGuest: '4Gi' }, '2Gi');
    const out = withoutLiveMemory(vm, w, hotplugged);
    expect(out.spec.domain.memory).toEqual({ guest: '2Gi', maxGuest: '4Gi' });
    expect(out.spec.domain.resources?.requests?.memory).toBe('2Gi');
    // A request changed in the template beyond what the hotplug explains stays a difference.
    const other = wanted('2Gi');
    other.spec.domain.resources = { requests: { memory: '3Gi' } };
    expect(withoutLiveMemory(vm, other, hotplugged).spec.domain.resources?.requests?.memory).toBe('3Gi');
  });
});
