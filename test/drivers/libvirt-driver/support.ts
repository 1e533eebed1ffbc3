/** Shared setup of the libvirt driver tests: daemon availability and scratch paths. */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { upstreamPaths } from '../../../src/converter';
import * as guest from '../../support/guest';
import { KERNEL_CMDLINE } from '../../support/guest';
import { integration } from '../../support/integration';

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

/**
 * The set-up of a file that boots the real tiny guest on the host's libvirtd: whether it
 * runs (the daemon and the guest present, else the reason), a scratch directory, and
 * cleanups run after the file (then the scratch directory removed).
 */
export function realGuestSuite(title: string, prefix: string) {
  const run = integration(
    title,
    daemonAvailable && guest.available(),
    daemonAvailable ? guest.unavailableReason : daemonMissing,
  );
  const scratch = scratchPaths(prefix);
  const leftovers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of leftovers) await cleanup().catch(() => undefined);
    rmSync(scratch.dir, { recursive: true, force: true });
  });
  return { run, scratch, leftovers };
}

/** The tiny guest as a VMI: kernel and initrd from a kernelBoot "container" directory. */
export function tinyGuestVmi(name: string, namespace = 'kvts-drivers'): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name, namespace, uid: randomUUID() },
    spec: {
      domain: {
        cpu: { cores: 1 },
        memory: { guest: '128Mi' },
        resources: { requests: { memory: '128Mi' } },
        firmware: {
          kernelBoot: {
            kernelArgs: KERNEL_CMDLINE,
            container: { image: 'kubevirt-ts/tiny-guest', kernelPath: '/vmlinuz', initrdPath: '/initrd.img' },
          },
        },
        devices: { autoattachGraphicsDevice: false, autoattachMemBalloon: false },
      },
    },
  } as VirtualMachineInstance;
}
