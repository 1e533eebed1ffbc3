/**
 * The strongest proof: a converted VMI boots. The tiny test guest (a Debian kernel and a
 * busybox initramfs, scripts/guest/build.sh) is booted from the domain the converter made
 * for a VMI with kernel boot and a containerDisk, under software emulation on the system
 * libvirtd, and its serial console shows userspace up and the containerDisk mounted.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { convertVMIToXML, upstreamPaths } from '../../src/converter';
import {
  BOOT_MARKER,
  DISK_MARKER,
  diskPath,
  available as guestAvailable,
  guestDir,
  initrdPath,
  kernelPath,
  makeGuestWorkDir,
  SerialConsole,
  unavailableReason,
} from '../support/guest';
import { integration } from '../support/integration';
import { testContext } from './support/contexts';
import { admit } from './support/examples';
import { qemuDriverAvailable } from './support/libvirt';

const ready = qemuDriverAvailable && guestAvailable();
const run = integration(
  'converted domain boot',
  ready,
  qemuDriverAvailable ? unavailableReason : 'the system libvirtd does not answer',
);

describe('a converted VMI boots under QEMU (TCG)', () => {
  const work = ready ? makeGuestWorkDir('kvts-conv-boot-') : '';
  const domainName = `kvts-conv_boot-${process.pid}`;
  afterAll(() => {
    if (!ready) return;
    spawnSync('virsh', ['-q', '-c', 'qemu:///system', 'destroy', domainName], { stdio: 'ignore' });
    spawnSync('virsh', ['-q', '-c', 'qemu:///system', 'undefine', '--nvram', domainName], {
      stdio: 'ignore',
    });
    rmSync(work, { recursive: true, force: true });
  });

  it.runIf(run)(
    'reaches userspace and mounts its containerDisk',
    async () => {
      const uid = 'c0ffee00-0000-4000-8000-000000000001';
      const dir = (...p: string[]) => {
        const d = path.join(work, ...p);
        mkdirSync(d, { recursive: true });
        chmodSync(d, 0o777);
        return d;
      };
      const guest = realpathSync(guestDir);
      const paths = {
        ...upstreamPaths,
        privateDir: dir('private'),
        containerDiskDir: dir('container-disks'),
        ephemeralDiskDir: dir('ephemeral'),
        libvirtRunDir: dir('libvirt'),
        kernelBootDir: guest,
      };
      dir('private', uid);
      // The launcher's job, done by hand: the container disk image and its overlay.
      symlinkSync(realpathSync(diskPath), path.join(paths.containerDiskDir, 'disk_0.img'));
      const overlay = path.join(dir('ephemeral', 'disk'), 'disk.qcow2');
      execFileSync('qemu-img', [
        'create',
        '-q',
        '-f',
        'qcow2',
        '-F',
        'qcow2',
        '-b',
        path.join(paths.containerDiskDir, 'disk_0.img'),
        overlay,
      ]);
      chmodSync(overlay, 0o666);

      const vmi: VirtualMachineInstance = {
        metadata: { name: `boot-${process.pid}`, namespace: 'kvts-conv', uid },
        spec: {
          domain: {
            memory: { guest: '128Mi' },
            firmware: {
              kernelBoot: {
                kernelArgs: 'console=ttyS0 quiet panic=-1',
                container: {
                  image: 'local/guest',
                  kernelPath: `/${path.basename(kernelPath)}`,
                  initrdPath: `/${path.basename(initrdPath)}`,
                },
              },
            },
            // No pod network: creating its tap is the network setup's job, not this test's.
            devices: { autoattachPodInterface: false, disks: [{ name: 'disk', disk: { bus: 'virtio' } }] },
          },
          volumes: [{ name: 'disk', containerDisk: { image: 'local/disk' } }],
        },
      };
      const ctx = testContext({
        kvmAvailable: false,
        allowEmulation: true,
        paths,
        backingFormats: { disk: 'qcow2' },
      });
      const xml = convertVMIToXML(admit(vmi), ctx);
      expect(xml).toMatch(/^<domain type="qemu">/);
      const file = path.join(work, 'domain.xml');
      execFileSync('sh', ['-c', 'cat > "$1"', 'sh', file], { input: xml });
      execFileSync('virsh', ['-q', '-c', 'qemu:///system', 'define', file]);
      execFileSync('virsh', ['-q', '-c', 'qemu:///system', 'start', domainName]);
      const serial = await SerialConsole.connect(path.join(paths.privateDir, uid, 'virt-serial0'));
      try {
        await serial.waitFor(BOOT_MARKER, 120_000);
        const out = await serial.waitFor(DISK_MARKER, 60_000);
        expect(out).toContain(DISK_MARKER);
      } finally {
        serial.close();
      }
    },
    240_000,
  );
});
