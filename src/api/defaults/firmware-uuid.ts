/**
 * Firmware UUIDs. Upstream's VM controller derives a VMI's firmware UUID from the VM name
 * (UUIDv5 over a fixed namespace) so it is stable across restarts; defaulting uses the same
 * derivation for VMIs so that the pure defaulting functions stay deterministic. VMs also get
 * an SMBIOS serial, derived the same way.
 */
import { createHash } from 'node:crypto';

/** The namespace upstream uses (`firmwareUUIDns` in pkg/virt-controller/watch/vm.go). */
export const firmwareUUIDNamespace = '6a1a24a1-4061-4607-8bf4-a3963d0c5895';

/** RFC 4122 version-5 (SHA-1) UUID of `name` in `namespace`. */
export function uuidV5(namespace: string, name: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  const b = hash.subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The firmware UUID upstream gives the VMI of a VM named `vmName`. */
export function firmwareUUIDForName(vmName: string): string {
  return uuidV5(firmwareUUIDNamespace, vmName);
}

/**
 * The SMBIOS system serial given to a new VM's template that sets none. Upstream's VM
 * mutator generates one for every new VM, as it does the firmware UUID; here it is derived
 * from the VM's namespace and name (UUIDv5, like {@link firmwareUUIDForName}) so pure
 * defaulting stays deterministic and re-applying a manifest keeps the same serial.
 */
export function firmwareSerialForVM(namespace: string, vmName: string): string {
  return uuidV5(firmwareUUIDNamespace, `serial/${namespace}/${vmName}`);
}
