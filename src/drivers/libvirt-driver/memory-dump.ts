/**
 * The libvirt driver's memory dump (upstream's launcher `MemoryDump`):
 * virDomainCoreDumpWithFormat of the running guest with `VIR_DUMP_MEMORY_ONLY` in the raw
 * format, which QEMU writes as an ELF core of the guest's RAM (`dump-guest-memory`); the
 * guest keeps running (a memory-only dump pauses nothing in the guest's view but the
 * vCPUs while QEMU copies). libvirt opens the file itself and hands it to QEMU.
 */
import type { DomainRef, MemoryDumpSupport } from '../driver';
import { CoreDumpFormat, DumpFlags, type LibvirtClient, type DomainRef as LibvirtDomain } from '../libvirt';
import { mapLibvirtError } from './error-map';

/** What the capability needs from the driver. */
export interface MemoryDumpHost {
  /** The driver's connection (read when called: the driver may reconnect). */
  client(): LibvirtClient;
  /** The running (or paused) domain, or a `DriverError`. */
  lookupActive(ref: DomainRef, op: string): Promise<LibvirtDomain>;
}

/** Builds the capability over a driver's libvirt connection. */
export function libvirtMemoryDump(host: MemoryDumpHost): MemoryDumpSupport {
  return {
    async dump(ref, path) {
      const dom = await host.lookupActive(ref, 'dump memory');
      try {
        // No call timeout: the dump takes as long as the guest's RAM takes to write.
        await host.client().domainCoreDumpWithFormat(dom, path, CoreDumpFormat.RAW, DumpFlags.MEMORY_ONLY, 0);
      } catch (e) {
        throw mapLibvirtError(e, `domain ${dom.name}`, 'dump memory');
      }
    },
  };
}
