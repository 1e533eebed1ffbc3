/**
 * Volume hotplug on the fake driver: each domain keeps the set of hotplugged volumes
 * (`FakeDomain.hotplugged`); `syncDisks` attaches the ready hotpluggable volumes of the
 * VMI and detaches those that left its spec; the device calls take a `<disk>` XML and
 * record its alias's volume, as the libvirt driver's do.
 */
import type { VirtualMachineInstance } from '../../api';
import { type DiskHotplugSupport, type DomainRef, domainName, refOf, type SyncOptions } from '../driver';
import { DriverError } from '../errors';
import type { FakeDomain, FakeHost } from './fake-host';

const aliasOf = (xml: string) => {
  const m = /<alias name="ua-([^"]+)"/.exec(xml);
  if (!m) throw new DriverError('Invalid', 'fake driver: a hotplugged disk needs an alias ua-<volume>');
  return m[1] as string;
};

/** The fake driver's disk hotplug over `host`; `enter` runs before each call (latency, injected failures). */
export function fakeDiskHotplug(host: FakeHost, enter: () => Promise<void>): DiskHotplugSupport {
  const active = (ref: DomainRef, op: string): FakeDomain => {
    const dom = host.domains.get(domainName(ref));
    if (!dom)
      throw new DriverError('NotFound', `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain`);
    if (dom.info.state === 'shutoff' || dom.info.state === 'crashed')
      throw new DriverError('InvalidState', `domain ${dom.info.name}: cannot ${op}, it is ${dom.info.state}`);
    dom.hotplugged ??= new Set();
    return dom;
  };
  return {
    async attachDevice(ref, xml) {
      await enter();
      const dom = active(ref, 'attach a device');
      const name = aliasOf(xml);
      if (dom.hotplugged?.has(name))
        throw new DriverError('Invalid', `domain ${dom.info.name}: disk ${name} is attached`);
      dom.hotplugged?.add(name);
    },
    async detachDevice(ref, xml) {
      await enter();
      active(ref, 'detach a device').hotplugged?.delete(aliasOf(xml));
    },
    async syncDisks(vmi: VirtualMachineInstance, options: SyncOptions) {
      await enter();
      const dom = active(refOf(vmi), 'hotplug disks');
      const hot = (vmi.spec.volumes ?? []).filter(
        (v) => v.dataVolume?.hotpluggable || v.persistentVolumeClaim?.hotpluggable,
      );
      const wanted = new Set(hot.map((v) => v.name));
      for (const n of [...(dom.hotplugged ?? [])]) if (!wanted.has(n)) dom.hotplugged?.delete(n);
      for (const n of wanted) if (options.hotplugReady?.has(n)) dom.hotplugged?.add(n);
      return [...(dom.hotplugged ?? [])].sort();
    },
  };
}
