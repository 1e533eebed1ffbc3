/**
 * Memory hotplug through libvirt (upstream's launcher UpdateGuestMemory): the VMI's
 * virtio-mem device (the converter's `virtioMemDevice`) is attached live and in the
 * definition the first time; later its requested size is changed on the live device
 * (virDomainUpdateDeviceFlags, live). The guest plugs the memory in 2 MiB blocks.
 */
import type { VirtualMachineInstance } from '../../api';
import { decodeDomain, encodeDevice, virtioMemDevice } from '../../converter';
import { type DomainRef, type MemoryHotplugSupport, refOf } from '../driver';
import { DriverError } from '../errors';
import { AffectFlags, type LibvirtClient, type DomainRef as LibvirtDomain } from '../libvirt';

export interface MemoryHotplugDeps {
  client: () => LibvirtClient;
  lookupActive: (ref: DomainRef, op: string) => Promise<LibvirtDomain>;
  call: <T>(name: string, op: string, fn: () => Promise<T>) => Promise<T>;
}

/** Memory hotplug over libvirt. */
export function libvirtMemoryHotplug(d: MemoryHotplugDeps): MemoryHotplugSupport {
  return {
    async syncGuestMemory(vmi: VirtualMachineInstance): Promise<void> {
      const device = virtioMemDevice(vmi);
      if (!device) {
        throw new DriverError(
          'Invalid',
          'spec.domain.memory.guest: not above the memory the guest booted with, within maxGuest: nothing to hot-plug',
        );
      }
      const op = 'hot-plug memory';
      const dom = await d.lookupActive(refOf(vmi), op);
      const live = decodeDomain(await d.call(dom.name, 'read XML', () => d.client().domainGetXMLDesc(dom)));
      const existing = live.devices?.memory?.find((m) => m.model === 'virtio-mem');
      if (!existing) {
        const xml = encodeDevice('memory', device);
        await d.call(dom.name, op, () =>
          d.client().domainAttachDevice(dom, xml, AffectFlags.LIVE | AffectFlags.CONFIG),
        );
        return;
      }
      const { current: _plugged, ...target } = existing.target;
      const xml = encodeDevice('memory', {
        ...existing,
        target: { ...target, requested: device.target.requested },
      });
      await d.call(dom.name, op, () => d.client().domainUpdateDevice(dom, xml, AffectFlags.LIVE));
    },
  };
}
