/**
 * CPU hotplug through libvirt (upstream's launcher UpdateVCPUs): virDomainSetVcpusFlags
 * with VIR_DOMAIN_VCPU_LIVE | VIR_DOMAIN_VCPU_CONFIG, so the running guest gets the
 * vCPUs and its persistent definition keeps them. QEMU adds the vCPUs the domain XML
 * marked hotpluggable (the converter's `<vcpus>`); the guest sees them by ACPI.
 */
import type { CpuHotplugSupport, DomainRef } from '../driver';
import { DriverError } from '../errors';
import { AffectFlags, type LibvirtClient, type DomainRef as LibvirtDomain } from '../libvirt';

export interface CpuHotplugDeps {
  client: () => LibvirtClient;
  lookupActive: (ref: DomainRef, op: string) => Promise<LibvirtDomain>;
  call: <T>(name: string, op: string, fn: () => Promise<T>) => Promise<T>;
}

/** CPU hotplug over libvirt. */
export function libvirtCpuHotplug(d: CpuHotplugDeps): CpuHotplugSupport {
  return {
    async setVcpus(ref: DomainRef, count: number): Promise<void> {
      if (!Number.isInteger(count) || count < 1)
        throw new DriverError('Invalid', `vCPU count must be a positive integer, got ${count}`);
      const dom = await d.lookupActive(ref, 'set its vCPUs');
      await d.call(dom.name, 'set its vCPUs', () =>
        d.client().domainSetVcpus(dom, count, AffectFlags.LIVE | AffectFlags.CONFIG),
      );
    },
  };
}
