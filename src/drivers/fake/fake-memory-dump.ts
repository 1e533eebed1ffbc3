/**
 * Memory dumps on the fake driver: the file gets a 64-byte ELF64 core header (e_type
 * ET_CORE, x86-64) and is extended, sparse, to the guest's memory size, so what reads a
 * dump (its size, `file`/`readelf -h`) sees the shape of a real one without copying RAM.
 */
import { open } from 'node:fs/promises';
import { type DomainRef, domainName, type MemoryDumpSupport } from '../driver';
import { DriverError } from '../errors';
import type { FakeHost } from './fake-host';

/** An ELF64 little-endian header of an x86-64 core file with no program headers. */
export function elfCoreHeader(): Buffer {
  const h = Buffer.alloc(64);
  h.write('\x7fELF', 0, 'latin1');
  h[4] = 2; // ELFCLASS64
  h[5] = 1; // little endian
  h[6] = 1; // EV_CURRENT
  h.writeUInt16LE(4, 16); // ET_CORE
  h.writeUInt16LE(62, 18); // EM_X86_64
  h.writeUInt32LE(1, 20); // EV_CURRENT
  h.writeUInt16LE(64, 52); // e_ehsize
  h.writeUInt16LE(56, 54); // e_phentsize
  return h;
}

/** The fake driver's memory dump over `host`; `enter` runs before each call (latency, injected failures). */
export function fakeMemoryDump(host: FakeHost, enter: () => Promise<void>): MemoryDumpSupport {
  return {
    async dump(ref: DomainRef, path: string) {
      await enter();
      const dom = host.domains.get(domainName(ref));
      if (!dom)
        throw new DriverError('NotFound', `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain`);
      if (dom.info.state !== 'running' && dom.info.state !== 'paused')
        throw new DriverError(
          'InvalidState',
          `domain ${dom.info.name}: cannot dump memory, it is ${dom.info.state}`,
        );
      const fh = await open(path, 'w', 0o660);
      try {
        await fh.write(elfCoreHeader(), 0, 64, 0);
        await fh.truncate(Math.max(64, dom.info.memoryKiB * 1024));
      } finally {
        await fh.close();
      }
    },
  };
}
