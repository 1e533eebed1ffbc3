/**
 * How big a memory dump claim must be, as upstream computes it (pkg/util
 * CalcExpectedMemoryDumpSize and storagetypes GetSizeIncludingFSOverhead): the guest's
 * memory request plus 100 MiB, plus the filesystem overhead (CDIConfig's for the claim's
 * storage class, else its global one, else CDI's default 5.5 %), rounded up to a MiB.
 * virt-api checks a claim against it; `virtctl memory-dump get --create-claim` sizes one.
 */
import type { CDIConfig } from '../../api/generated/cdi/types';
import type { VirtualMachineInstance } from '../../api/generated/types';
import { bytesOf } from './quantity';

const MiB = 1024n * 1024n;
/** upstream's memoryDumpOverhead. */
const DUMP_OVERHEAD = 100n * MiB;
/** upstream storagetypes.DefaultFSOverhead. */
export const DEFAULT_FS_OVERHEAD = '0.055';

/** The guest's memory request plus upstream's 100 MiB dump overhead, in bytes. */
export function expectedMemoryDumpBytes(vmi: VirtualMachineInstance): bigint {
  const d = vmi.spec.domain;
  const mem =
    bytesOf(d.resources?.requests?.memory as string | undefined, 'spec.domain.resources.requests.memory') ??
    bytesOf(d.memory?.guest as string | undefined, 'spec.domain.memory.guest') ??
    0n;
  return mem + DUMP_OVERHEAD;
}

/** upstream GetFilesystemOverhead: the class's, else the global one, else the default. */
export function filesystemOverhead(config: CDIConfig | undefined, storageClass: string | undefined): string {
  const o = config?.status?.filesystemOverhead;
  return (storageClass ? o?.storageClass?.[storageClass] : undefined) ?? o?.global ?? DEFAULT_FS_OVERHEAD;
}

/** upstream GetSizeIncludingGivenOverhead: `bytes * (1 + overhead)`, rounded up to a MiB. */
export function withFilesystemOverhead(bytes: bigint, overhead: string): bigint {
  const f = Number(overhead);
  if (!Number.isFinite(f) || f < 0 || f >= 1)
    throw new Error(`filesystem overhead ${JSON.stringify(overhead)} is not a fraction`);
  const total = Math.ceil(Number(bytes) * (1 + f));
  return ((BigInt(total) + MiB - 1n) / MiB) * MiB;
}
