/** Shared setup of the libvirt driver tests: daemon availability and scratch paths. */
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VirtualMachineInstance } from '../../../src/api';
import { upstreamPaths } from '../../../src/converter';
import { KERNEL_CMDLINE } from '../../support/guest';

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
