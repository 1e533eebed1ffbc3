/**
 * Software emulation: choosing the libvirt domain type. KVM (`kvm`) when the host's
 * /dev/kvm works; software emulation (`qemu`, TCG) only when KVM is unusable and the
 * cluster allows it (`developerConfiguration.useEmulation`), as upstream KubeVirt does;
 * otherwise a clear refusal that says what to change.
 */
import type { HostCapabilities } from '../driver';
import { DriverError } from '../errors';

/** libvirt domain types a driver can pick. */
export type VirtType = 'kvm' | 'qemu';

/** What decides the domain type. */
export interface VirtTypeInput {
  capabilities: Pick<HostCapabilities, 'kvmUsable' | 'emulationAvailable'>;
  /** `developerConfiguration.useEmulation` of the KubeVirt configuration. */
  useEmulation: boolean;
  /** Who asks, for the error message (e.g. `VirtualMachineInstance ns/name`). */
  subject: string;
}

/** The domain type to run `subject` with, or a `DriverError` (`Unsupported`) explaining why none fits. */
export function chooseVirtType({ capabilities, useEmulation, subject }: VirtTypeInput): VirtType {
  if (capabilities.kvmUsable) return 'kvm';
  if (!useEmulation) {
    throw new DriverError(
      'Unsupported',
      `${subject}: KVM is not usable on this host (/dev/kvm missing or not working) and software emulation is not allowed; set spec.configuration.developerConfiguration.useEmulation: true in the KubeVirt configuration to run it under emulation (slow), or schedule it on a node with KVM`,
    );
  }
  if (!capabilities.emulationAvailable) {
    throw new DriverError(
      'Unsupported',
      `${subject}: KVM is not usable and this host's QEMU cannot emulate the guest architecture (no TCG domain type in libvirt's capabilities); install qemu-system for the guest architecture`,
    );
  }
  return 'qemu';
}
