/**
 * Memory hotplug eligibility (upstream pkg/liveupdate/memory): under the LiveUpdate
 * rollout strategy a VMI gets `maxGuest` headroom only when its memory layout allows
 * virtio-mem hotplug.
 */
import { compareQuantities, formatQuantity, parseQuantity, quantityValue } from '../config/quantity';
import type { Quantity, VirtualMachineInstanceSpec } from '../generated/types';

const blockAlignment = 0x200000; // 2Mi, QEMU's recommended virtio-mem block
const hugepage1GAlignment = 0x40000000; // 1Gi hugepages need 1Gi blocks
const minGuestMemory = 0x40000000; // 1Gi: enough for the kernel's structures and the PCI hole

/** Why memory hotplug is not possible for `spec` with `maxGuest`, or undefined when it is. */
export function liveUpdateMemoryProblem(
  spec: VirtualMachineInstanceSpec,
  maxGuest: Quantity | undefined,
): string | undefined {
  const d = spec.domain;
  if (d.cpu?.realtime) return 'Memory hotplug is not compatible with realtime VMs';
  if (d.cpu?.numa?.guestMappingPassthrough)
    return 'Memory hotplug is not compatible with guest mapping passthrough';
  if (d.launchSecurity) return 'Memory hotplug is not compatible with encrypted VMs';
  const align = d.memory?.hugepages?.pageSize === '1Gi' ? hugepage1GAlignment : blockAlignment;
  const guest = d.memory?.guest;
  if (guest === undefined) return 'Guest memory must be configured when memory hotplug is enabled';
  if (maxGuest === undefined) return 'Max guest memory must be configured when memory hotplug is enabled';
  // Malformed quantities are validation's to report; defaulting must not throw on them.
  if (!parseQuantity(guest)) return 'Guest memory is not a valid quantity';
  if (!parseQuantity(maxGuest)) return 'Max guest memory is not a valid quantity';
  if (compareQuantities(guest, maxGuest) > 0)
    return 'Guest memory is greater than the configured maxGuest memory';
  if (quantityValue(guest) % align !== 0) return `Guest memory must be ${formatQuantity(align)} aligned`;
  if (quantityValue(maxGuest) % align !== 0) return `MaxGuest must be ${formatQuantity(align)} aligned`;
  if (spec.architecture !== 'amd64' && spec.architecture !== 'arm64') {
    return 'Memory hotplug is only available for x86_64 and arm64 VMs';
  }
  if (quantityValue(guest) < minGuestMemory) {
    return 'Memory hotplug is only available for VMs with at least 1Gi of guest memory';
  }
  return undefined;
}
