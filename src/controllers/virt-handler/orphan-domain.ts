/** Removing the domain a dead launcher left behind (only under a shared libvirtd can one outlive it). */
import type { VirtualMachineInstance } from '../../api/generated/types';
import type { HypervisorDriver } from '../../drivers/driver';

/** Deletes the VMI's domain through `driver`; a failure is logged, not thrown (the VMI is over either way). */
export async function removeOrphanDomain(
  vmi: VirtualMachineInstance,
  driver: () => Promise<HypervisorDriver>,
  log: (m: string) => void,
): Promise<void> {
  const ref = { namespace: vmi.metadata?.namespace ?? 'default', name: vmi.metadata?.name ?? '' };
  try {
    const d = await driver();
    try {
      await d.delete(ref);
    } finally {
      await d.close();
    }
  } catch (e) {
    log(`${ref.namespace}/${ref.name}: removing the domain its dead launcher left: ${(e as Error).message}`);
  }
}
