/**
 * Who starts passt for a passtBinding interface, decided from what the hypervisor reports
 * rather than from its version: libvirt when its domain capabilities list the `passt`
 * interface backend, else the launcher (QEMU then joins passt's socket through
 * `<qemu:commandline>`; converter/configurators/passt-qemu.ts). Debian 12's libvirt 9.0.0
 * reports no interface backends and refuses `<backend type="passt"/>` at define.
 */
import type { HostCapabilities } from './driver';

/** The converter's `passtBackend` for a host with `caps`. */
export function passtBackendFor(caps: Pick<HostCapabilities, 'interfaceBackends'>): 'libvirt' | 'qemu' {
  return caps.interfaceBackends?.includes('passt') ? 'libvirt' : 'qemu';
}
