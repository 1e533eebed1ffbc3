/**
 * NIC hotplug on the fake driver: each domain keeps the names of the VMI interfaces it has
 * (`FakeDomain.nics`, at first those of the VMI it was started or migrated with, not
 * `absent`); `syncInterfaces` adds the ready ones the VMI has and drops the absent ones,
 * as the libvirt driver's does.
 */
import type { VirtualMachineInstance } from '../../api';
import { domainName, type NicHotplugSupport, refOf } from '../driver';
import { DriverError } from '../errors';
import type { FakeHost } from './fake-host';

/** The fake driver's NIC hotplug over `host`; `enter` runs before each call (latency, injected failures). */
export function fakeNicHotplug(host: FakeHost, enter: () => Promise<void>): NicHotplugSupport {
  return {
    async syncInterfaces(vmi: VirtualMachineInstance, ready: ReadonlySet<string>) {
      await enter();
      const ref = refOf(vmi);
      const dom = host.domains.get(domainName(ref));
      if (!dom)
        throw new DriverError('NotFound', `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain`);
      if (dom.info.state === 'shutoff' || dom.info.state === 'crashed')
        throw new DriverError(
          'InvalidState',
          `domain ${dom.info.name}: cannot hotplug interfaces, it is ${dom.info.state}`,
        );
      const nics = new Set(
        dom.nics ??
          (dom.vmi.spec.domain.devices.interfaces ?? [])
            .filter((i) => i.state !== 'absent')
            .map((i) => i.name),
      );
      for (const iface of vmi.spec.domain.devices.interfaces ?? []) {
        if (iface.state === 'absent') nics.delete(iface.name);
        else if (ready.has(iface.name)) nics.add(iface.name);
      }
      dom.nics = [...nics];
      return [...nics];
    },
  };
}
