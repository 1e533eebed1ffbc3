/**
 * Memory: guest size (`memory.guest`, else the request), memory hotplug headroom
 * (`maxGuest`: maxMemory with slots and one NUMA cell, as libvirt requires), the
 * virtio-mem device of a guest that was hot-plugged (../virtio-mem), and hugepage backing.
 */
import { quantityValue } from '../../api/config/quantity';
import type { Configurator, Conversion } from '../conversion';
import { guestMemoryBytes, hugepageKiB } from '../memory-size';
import { bootMemoryBytes, virtioMemDevice } from '../virtio-mem';

export const memoryConfigurator: Configurator = {
  name: 'memory',
  configure(c: Conversion) {
    // A hot-plugged guest (./virtio-mem): its boot memory here, the rest on the device.
    const hotplugged = virtioMemDevice(c.vmi);
    const bytes = hotplugged ? (bootMemoryBytes(c.vmi) ?? guestMemoryBytes(c)) : guestMemoryBytes(c);
    const kib = Math.ceil(bytes / 1024);
    c.domain.memory = { unit: 'KiB', value: kib };
    if (hotplugged) {
      c.domain.devices ??= {};
      c.domain.devices.memory = [hotplugged];
    }
    const hp = hugepageKiB(c);
    if (hp !== undefined) {
      if (kib % hp !== 0)
        c.fail('spec.domain.memory.guest', `must be a multiple of the hugepage size (${hp} KiB)`);
      c.domain.memoryBacking ??= {};
      // NUMA passthrough (cpu configurator) may already have split pages per node.
      c.domain.memoryBacking.hugepages ??= { page: [{ size: hp, unit: 'KiB' }] };
    }
    const max = c.spec.domain.memory?.maxGuest;
    if (max !== undefined) {
      const maxKiB = Math.ceil(quantityValue(max) / 1024);
      if (maxKiB < kib) c.fail('spec.domain.memory.maxGuest', 'must not be smaller than the guest memory');
      if (maxKiB > kib) {
        c.domain.maxMemory = { unit: 'KiB', slots: 16, value: maxKiB };
        c.domain.cpu ??= {};
        c.domain.cpu.numa ??= {
          cell: [{ id: 0, cpus: `0-${(c.domain.vcpu?.value ?? 1) - 1}`, memory: kib, unit: 'KiB' }],
        };
      }
    }
  },
};
