/** Shared helpers of the libvirt client tests: is the system daemon reachable? */
import { existsSync } from 'node:fs';
import net from 'node:net';
import { DEFAULT_SOCKET_PATH } from '../../../src/drivers/libvirt';

/** Resolves true when libvirtd accepts connections on its default unix socket. */
export async function systemDaemonReachable(path = DEFAULT_SOCKET_PATH): Promise<boolean> {
  if (!existsSync(path)) return false;
  return new Promise((resolve) => {
    const s = net.createConnection({ path });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** A unique domain name for tests on qemu:///system (always cleaned up by the test). */
export function testDomainName(tag: string): string {
  return `kvts-test-libvirt-${tag}-${process.pid}-${Date.now().toString(36)}`;
}

/** A tiny diskless domain that starts under TCG (no KVM needed). */
export function tinyDomainXML(name: string, type: 'qemu' | 'test' = 'qemu'): string {
  return `<domain type='${type}'>
  <name>${name}</name>
  <memory unit='MiB'>32</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices><emulator>/usr/bin/qemu-system-x86_64</emulator></devices>
</domain>`;
}
