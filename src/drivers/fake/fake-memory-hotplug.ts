/**
 * Memory hotplug on the fake driver: a running domain's memory (`info.memoryKiB`) set to
 * the VMI's `memory.guest` when its virtio-mem device (the converter's) has any to plug.
 */
import type { VirtualMachineInstance } from '../../api';
import { virtioMemDevice } from '../../converter/virtio-mem';
import { domainName, type MemoryHotplugSupport, refOf } from '../driver';
import { DriverError } from '../errors';
import type { FakeHost } from './fake-host';

/** The fake driver's memory hotplug over `host`; `enter` runs before each call (latency, injected failures). */
export function fakeMemoryHotplug(host: FakeHost, enter: () => Promise<void>): MemoryHotplugSupport {
  return {
    async syncGuestMemory(vmi: VirtualMachineInstance) {
      await enter();
      const ref = refOf(vmi);
      const dom = host.domains.get(domainName(ref));
      if (!dom)
        throw new DriverError('NotFound', `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain`);
      const device = virtioMemDevice(vmi);
      if (!device) throw new DriverError('Invalid', `domain ${dom.info.name}: no memory to hot-plug`);
      const bootKiB = dom.info.memoryKiB - (dom.hotpluggedKiB ?? 0);
      dom.hotpluggedKiB = device.target.requested.value;
      dom.info.memoryKiB = bootKiB + device.target.requested.value;
    },
  };
}
