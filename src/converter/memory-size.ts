/** The guest memory size of a VMI, as upstream computes it. */
import { quantityValue } from '../api/config/quantity';
import type { Conversion } from './conversion';

/** Guest memory in bytes: `memory.guest`, else the memory request, else the limit. */
export function guestMemoryBytes(c: Conversion): number {
  const d = c.spec.domain;
  const path =
    d.memory?.guest !== undefined ? 'spec.domain.memory.guest' : 'spec.domain.resources.requests.memory';
  const q = d.memory?.guest ?? d.resources?.requests?.memory ?? d.resources?.limits?.memory;
  if (q === undefined)
    c.fail('spec.domain.memory.guest', 'no guest memory: set memory.guest or resources.requests.memory');
  const bytes = quantityValue(q);
  if (bytes <= 0) c.fail(path, `'${String(q)}' is not a positive memory quantity`);
  return bytes;
}

/** Hugepage size in KiB from `memory.hugepages.pageSize` (`2Mi`, `1Gi`), or undefined. */
export function hugepageKiB(c: Conversion): number | undefined {
  const size = c.spec.domain.memory?.hugepages?.pageSize;
  if (size === undefined) return undefined;
  const bytes = quantityValue(size);
  if (bytes !== 2 * 1024 * 1024 && bytes !== 1024 * 1024 * 1024) {
    c.fail(
      'spec.domain.memory.hugepages.pageSize',
      `'${c.line(String(size), 'spec.domain.memory.hugepages.pageSize')}' is not one of 2Mi, 1Gi`,
    );
  }
  return bytes / 1024;
}
