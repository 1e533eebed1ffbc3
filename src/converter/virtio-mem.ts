/**
 * The virtio-mem device of memory hotplug (upstream's pkg/liveupdate/memory
 * BuildMemoryDevice): when a VMI's `memory.guest` was raised above what it booted with
 * (`status.memory.guestAtBoot`) within `maxGuest`, the guest's memory beyond the boot
 * size is a virtio-mem device on NUMA node 0, `maxGuest - boot` large, with `guest - boot`
 * requested, in 2 MiB blocks (1 GiB with 1Gi hugepages). None before the first hotplug,
 * as upstream (the device is attached then).
 */
import { quantityValue } from '../api/config/quantity';
import type { VirtualMachineInstance } from '../api/generated/types';
import type { MemoryDevice } from './domain/device-types';

/** The bytes the VMI's guest booted with: `status.memory.guestAtBoot`, else `memory.guest`. */
export function bootMemoryBytes(vmi: VirtualMachineInstance): number | undefined {
  const q = vmi.status?.memory?.guestAtBoot ?? vmi.spec?.domain?.memory?.guest;
  return q === undefined ? undefined : quantityValue(q);
}

/** The VMI's virtio-mem device, or undefined while its guest has no more than it booted with. */
export function virtioMemDevice(vmi: VirtualMachineInstance): MemoryDevice | undefined {
  const memory = vmi.spec?.domain?.memory;
  const boot = bootMemoryBytes(vmi);
  if (!memory?.maxGuest || memory.guest === undefined || boot === undefined) return undefined;
  const max = quantityValue(memory.maxGuest);
  const guest = quantityValue(memory.guest);
  if (guest <= boot || max <= boot) return undefined;
  const blockKiB = memory.hugepages?.pageSize === '1Gi' ? 1024 * 1024 : 2048;
  return {
    model: 'virtio-mem',
    target: {
      size: { unit: 'KiB', value: Math.floor((max - boot) / 1024) },
      node: 0,
      block: { unit: 'KiB', value: blockKiB },
      requested: { unit: 'KiB', value: Math.floor((Math.min(guest, max) - boot) / 1024) },
    },
  };
}
