/** Shared setup of the libvirt driver tests: daemon availability and scratch paths. */
import { chmodSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { upstreamPaths } from '../../../src/converter';

export const LIBVIRT_SOCKET = '/var/run/libvirt/libvirt-sock';
export const daemonAvailable = existsSync(LIBVIRT_SOCKET);
export const daemonMissing = `libvirtd's socket ${LIBVIRT_SOCKET} does not exist (start libvirtd: scripts/setup-host.sh)`;

/** Converter paths below a fresh world-writable scratch dir (QEMU runs as libvirt-qemu). */
export function scratchPaths(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o777);
  return {
    dir,
    paths: { ...upstreamPaths, privateDir: join(dir, 'private'), libvirtRunDir: join(dir, 'libvirt') },
  };
}
