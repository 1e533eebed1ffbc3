/**
 * NIC hotplug through libvirt (upstream's launcher nichotplug.go: hotplugVirtioInterface,
 * hotUnplugVirtioInterface): the domain the VMI renders to now is compared with the live
 * domain by interface alias (`ua-<interface>`). A VMI interface named ready (its tap is in
 * the pod) that is not `absent` and that the live domain lacks is attached with
 * virDomainAttachDeviceFlags (AFFECT_LIVE; libvirt picks its PCI slot, on q35 one of the
 * spare root ports the domain was defined with); a live interface whose VMI interface is
 * `absent` is detached, and the detach is waited for until the guest let the device go.
 */

import type { VirtualMachineInstance } from '../../api';
import { type Domain, decodeDomain, encodeDevice, type Interface } from '../../converter';
import { type DomainRef, type NicHotplugSupport, refOf, type SyncOptions } from '../driver';
import { DriverError } from '../errors';
import { AffectFlags, type LibvirtClient, type DomainRef as LibvirtDomain } from '../libvirt';

export interface NicHotplugDeps {
  client: () => LibvirtClient;
  lookupActive: (ref: DomainRef, op: string) => Promise<LibvirtDomain>;
  call: <T>(name: string, op: string, fn: () => Promise<T>) => Promise<T>;
  render: (vmi: VirtualMachineInstance, options: SyncOptions) => Promise<{ domain: Domain }>;
  /** How often a detach is looked at (default 100 ms). */
  pollMs?: number;
}

/** The VMI interface a domain interface is (its `ua-` alias), if any. */
export const interfaceOf = (x: Interface) =>
  x.alias?.name?.startsWith('ua-') ? x.alias.name.slice(3) : undefined;

/** NIC hotplug over libvirt. */
export function libvirtNicHotplug(d: NicHotplugDeps): NicHotplugSupport {
  const liveInterfaces = async (dom: LibvirtDomain): Promise<Interface[]> => {
    const text = await d.call(dom.name, 'read XML', () => d.client().domainGetXMLDesc(dom));
    return decodeDomain(text).devices?.interface ?? [];
  };

  const detach = async (dom: LibvirtDomain, x: Interface, timeoutMs: number) => {
    const name = interfaceOf(x);
    await d.call(dom.name, 'detach an interface', () =>
      d.client().domainDetachDevice(dom, encodeDevice('interface', x), AffectFlags.LIVE),
    );
    // The guest acknowledges the unplug (PCIe: after its attention-button delay): wait for it.
    const deadline = Date.now() + timeoutMs;
    while ((await liveInterfaces(dom)).some((y) => interfaceOf(y) === name)) {
      if (Date.now() > deadline)
        throw new DriverError(
          'Hypervisor',
          `domain ${dom.name}: the guest did not release interface ${name} within ${timeoutMs} ms`,
        );
      await new Promise((r) => setTimeout(r, d.pollMs ?? 100));
    }
  };

  const syncInterfaces = async (
    vmi: VirtualMachineInstance,
    ready: ReadonlySet<string>,
    options: SyncOptions,
    timeoutMs = 60_000,
  ) => {
    const dom = await d.lookupActive(refOf(vmi), 'hotplug interfaces');
    const spec = new Map((vmi.spec.domain.devices.interfaces ?? []).map((i) => [i.name, i]));
    let live = await liveInterfaces(dom);
    for (const x of live) {
      const name = interfaceOf(x);
      if (name !== undefined && spec.get(name)?.state === 'absent') await detach(dom, x, timeoutMs);
    }
    live = await liveInterfaces(dom);
    const have = new Set(live.map(interfaceOf));
    const missing = [...ready].filter((n) => !have.has(n) && spec.has(n) && spec.get(n)?.state !== 'absent');
    if (missing.length > 0) {
      const { domain } = await d.render(vmi, options);
      for (const x of domain.devices?.interface ?? []) {
        const name = interfaceOf(x);
        if (name === undefined || !missing.includes(name)) continue;
        // libvirt picks a free PCI slot; the boot-time numbering may be taken.
        const nic: Interface = { ...x };
        delete nic.address;
        await d.call(dom.name, 'attach an interface', () =>
          d.client().domainAttachDevice(dom, encodeDevice('interface', nic), AffectFlags.LIVE),
        );
      }
      live = await liveInterfaces(dom);
    }
    return live.map(interfaceOf).filter((n): n is string => n !== undefined && spec.has(n));
  };

  return { syncInterfaces };
}
