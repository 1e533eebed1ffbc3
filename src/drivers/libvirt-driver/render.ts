/**
 * The domain the libvirt driver (./libvirt-driver) defines for a VMI: the virtualization
 * type the host allows (KVM or TCG), the converter's output for that host (architecture,
 * SEV), the driver's name and type set, and the plugins' mutations applied.
 */
import type { VirtualMachineInstance } from '../../api';
import { convertVMI, type Domain, defaultConverterContext } from '../../converter';
import { domainName, type HostCapabilities, refOf, type SyncOptions } from '../driver';
import { chooseVirtType, type VirtType } from '../emulation/virt-type';
import { DriverError } from '../errors';
import { passtBackendFor } from '../passt-backend';
import { applyDomainMutations } from '../plugin';
import type { LibvirtDriverOptions } from './options';

/** 'Invalid' `DriverError` about `vmi` for a converter or encoder failure. */
export function invalidVmi(vmi: VirtualMachineInstance, e: unknown): DriverError {
  const ref = refOf(vmi);
  return new DriverError(
    'Invalid',
    `VirtualMachineInstance ${ref.namespace}/${ref.name}: ${(e as Error).message}`,
    {
      cause: e,
    },
  );
}

/** The domain model for `vmi` on a host with `caps`, as driver `driverName` configured by `options` renders it. */
export function renderDomain(
  vmi: VirtualMachineInstance,
  caps: HostCapabilities,
  options: LibvirtDriverOptions,
  driverName: string,
  syncOptions: SyncOptions,
): { domain: Domain; virtType: VirtType } {
  const ref = refOf(vmi);
  const virtType = chooseVirtType({
    capabilities: caps,
    useEmulation: syncOptions.useEmulation ?? false,
    subject: `VirtualMachineInstance ${ref.namespace}/${ref.name}`,
  });
  const ctx = defaultConverterContext({
    arch: caps.arch,
    kvmAvailable: virtType === 'kvm',
    allowEmulation: virtType === 'qemu',
    sev: caps.sev?.sev
      ? {
          cbitpos: caps.sev.cbitpos ?? 0,
          reducedPhysBits: caps.sev.reducedPhysBits ?? 0,
          es: caps.sev.sevEs,
          snp: caps.sev.sevSnp,
        }
      : undefined,
    passtBackend: passtBackendFor(caps),
    ...options.converterContext,
    ...(syncOptions.hotplugReady ? { hotplugReadyVolumes: syncOptions.hotplugReady } : {}),
  });
  let domain: Domain;
  try {
    domain = (options.render ?? convertVMI)(vmi, ctx);
  } catch (e) {
    throw invalidVmi(vmi, e);
  }
  domain.type = virtType;
  domain.name = domainName(ref);
  applyDomainMutations(options.plugins ?? [], domain, vmi, {
    capabilities: caps,
    options: syncOptions,
    driver: driverName,
  });
  return { domain, virtType };
}
