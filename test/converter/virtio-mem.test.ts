/**
 * Memory hotplug's virtio-mem device (upstream's BuildMemoryDevice): none before a
 * hotplug; once `memory.guest` is above the boot memory, the domain keeps its boot memory
 * and a device `maxGuest - boot` large requesting `guest - boot`, on NUMA node 0, in 2 MiB
 * blocks (1 GiB with 1Gi hugepages); its XML as libvirt takes it.
 */
import { describe, expect, it } from 'vitest';
import { encodeDevice, virtioMemDevice } from '../../src/converter';
import { memoryConfigurator } from '../../src/converter/configurators';
import { run, vmi } from './support/run';

const GiB = 1024 * 1024; // in KiB
const hot = (guest: string, atBoot = '1Gi', hugepages?: string) => {
  const v = vmi({
    domain: {
      memory: { guest, maxGuest: '4Gi', ...(hugepages ? { hugepages: { pageSize: hugepages } } : {}) },
    },
  });
  v.status = { memory: { guestAtBoot: atBoot, guestRequested: guest } };
  return v;
};

describe('virtioMemDevice', () => {
  it('is absent until the guest has more than it booted with', () => {
    expect(virtioMemDevice(hot('1Gi'))).toBeUndefined();
    expect(virtioMemDevice(vmi({ domain: { memory: { guest: '2Gi' } } }))).toBeUndefined();
    const d = run([memoryConfigurator], hot('1Gi'));
    expect(d.memory).toEqual({ unit: 'KiB', value: GiB });
    expect(d.maxMemory).toEqual({ unit: 'KiB', slots: 16, value: 4 * GiB });
    expect(d.devices.memory).toBeUndefined();
  });

  it('carries the memory above the boot size, the domain keeping its boot memory', () => {
    const d = run([memoryConfigurator], hot('2Gi'));
    expect(d.memory).toEqual({ unit: 'KiB', value: GiB });
    expect(d.cpu?.numa?.cell).toEqual([{ id: 0, cpus: '0-0', memory: GiB, unit: 'KiB' }]);
    expect(d.devices.memory).toEqual([
      {
        model: 'virtio-mem',
        target: {
          size: { unit: 'KiB', value: 3 * GiB },
          node: 0,
          block: { unit: 'KiB', value: 2048 },
          requested: { unit: 'KiB', value: GiB },
        },
      },
    ]);
    expect(virtioMemDevice(hot('2Gi', '1Gi', '1Gi'))?.target.block).toEqual({ unit: 'KiB', value: GiB });
    expect(
      encodeDevice('memory', virtioMemDevice(hot('2Gi')))
        .replace(/\s+</g, '<')
        .trim(),
    ).toBe(
      '<memory model="virtio-mem"><target><size unit="KiB">3145728</size><node>0</node>' +
        '<block unit="KiB">2048</block><requested unit="KiB">1048576</requested></target></memory>',
    );
  });
});
