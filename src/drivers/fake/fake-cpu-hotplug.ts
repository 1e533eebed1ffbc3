/**
 * CPU hotplug on the fake driver: a running domain's vCPU count (`info.vcpus`) set up to
 * the maximum its VMI allows (maxSockets x cores x threads), as libvirt's setvcpus does
 * for the converter's hotpluggable vCPUs.
 */
import { type CpuHotplugSupport, domainName } from '../driver';
import { DriverError } from '../errors';
import type { FakeHost } from './fake-host';

/** The fake driver's CPU hotplug over `host`; `enter` runs before each call (latency, injected failures). */
export function fakeCpuHotplug(host: FakeHost, enter: () => Promise<void>): CpuHotplugSupport {
  return {
    async setVcpus(ref, count) {
      await enter();
      const dom = host.domains.get(domainName(ref));
      if (!dom)
        throw new DriverError('NotFound', `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain`);
      if (dom.info.state === 'shutoff' || dom.info.state === 'crashed')
        throw new DriverError(
          'InvalidState',
          `domain ${dom.info.name}: cannot set its vCPUs, it is ${dom.info.state}`,
        );
      const cpu = dom.vmi.spec?.domain?.cpu ?? {};
      const max =
        (Math.max(cpu.maxSockets ?? 0, cpu.sockets ?? 1) || 1) * (cpu.cores || 1) * (cpu.threads || 1);
      if (!Number.isInteger(count) || count < 1 || count > max)
        throw new DriverError(
          'Invalid',
          `domain ${dom.info.name}: requested vcpus ${count} is not within 1..${max}`,
        );
      dom.info.vcpus = count;
    },
  };
}
