/**
 * A block-mode claim's hotplug through the libvirt driver with a real guest
 * (qemu:///system, software emulation): what virt-handler hands the launcher, a device
 * node `<volume>` in the hotplug directory with a loop device's numbers, is attached live
 * as a `type="block"` virtio disk with a serial (the converter's block volumes, as the
 * launcher fills them); the guest sees the serial and the size and writes to it; taking
 * the volume out detaches it, and the data is on the device's backing file. One boot.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, lstatSync, mkdirSync, openSync, readSync, realpathSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { splitDev } from '../../../src/controllers/virt-handler/device-cgroup';
import { decodeDomain } from '../../../src/converter';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import * as guest from '../../support/guest';
import { realGuestSuite, tinyGuestVmi } from './support';

const { run, scratch, leftovers } = realGuestSuite(
  'block-mode volume hotplug into a real guest through the libvirt driver',
  'kvts-test-drv-hpblock-',
);

const SIZE = 12 * 1024 * 1024;
const SECTOR = 1024;

it.skipIf(!run)(
  'attaches a block device node live as a block disk with its serial, the guest writes to it, detach removes it',
  { timeout: 240_000 },
  async () => {
    const hotplugDir = join(scratch.dir, 'hotplug-disks');
    mkdirSync(hotplugDir, { mode: 0o755 });
    const backing = join(scratch.dir, 'claim.raw');
    closeSync(openSync(backing, 'w', 0o600));
    truncateSync(backing, SIZE);
    const loop = execFileSync('losetup', ['-f', '--show', backing], { encoding: 'utf8' }).trim();
    leftovers.push(async () => void execFileSync('losetup', ['-d', loop]));
    // What the handler makes from the attachment pod's device: a node of its numbers.
    const { major, minor } = splitDev(lstatSync(loop, { bigint: true }).rdev);
    const node = join(hotplugDir, 'blk');
    execFileSync('mknod', ['-m', '0660', node, 'b', String(major), String(minor)]);
    const base = tinyGuestVmi(`kvts-test-drv-hpblock-${process.pid}`);
    const ref = { namespace: 'kvts-drivers', name: base.metadata?.name as string };
    const driver = await LibvirtDriver.connect({
      uri: 'qemu:///system',
      name: 'emulation',
      allowKvm: false,
      converterContext: {
        paths: { ...scratch.paths, hotplugDiskDir: hotplugDir, kernelBootDir: realpathSync(guest.guestDir) },
        blockVolumes: new Set(['blk']),
      },
    });
    leftovers.push(async () => {
      await driver.delete(ref);
      await driver.close();
    });
    base.spec.domain.features = {};
    const withVolume: VirtualMachineInstance = structuredClone(base);
    withVolume.spec.volumes = [
      { name: 'blk', persistentVolumeClaim: { claimName: 'blk', hotpluggable: true } },
    ];
    withVolume.spec.domain.devices.disks = [{ name: 'blk', disk: { bus: 'virtio' }, serial: 'HPBLOCK9' }];
    await driver.sync(withVolume, { useEmulation: true });
    const serial = await guest.SerialConsole.connect((await driver.consoleEndpoint(ref)).path as string);
    try {
      await serial.waitFor(guest.BOOT_MARKER, 120_000);
      expect(await serial.run('ls /sys/block')).not.toContain('vd');
      const t0 = performance.now();
      expect(
        await driver.hotplug.syncDisks(withVolume, { useEmulation: true, hotplugReady: new Set(['blk']) }),
      ).toEqual(['blk']);
      const attachMs = performance.now() - t0;
      const xml = execFileSync('virsh', ['-c', 'qemu:///system', 'dumpxml', `${ref.namespace}_${ref.name}`], {
        encoding: 'utf8',
      });
      const live = decodeDomain(xml).devices?.disk ?? [];
      expect(live.find((d) => d.alias?.name === 'ua-blk')).toMatchObject({
        type: 'block',
        source: { dev: node },
      });
      let dev = '';
      for (let i = 0; i < 100 && !dev; i++) {
        dev = (await serial.run('ls /sys/block | grep ^vd')).trim();
        if (!dev) await new Promise((r) => setTimeout(r, 300));
      }
      expect(dev).toMatch(/^vd[a-z]$/);
      expect((await serial.run(`cat /sys/block/${dev}/serial`)).trim()).toBe('HPBLOCK9');
      expect(Number((await serial.run(`cat /sys/block/${dev}/size`)).trim()) * 512).toBe(SIZE);
      const marker = `KVTS-HPBLOCK-${process.pid}`;
      await serial.run(
        `echo ${marker} | dd of=/dev/${dev} bs=512 seek=${SECTOR} conv=notrunc,fsync 2>/dev/null; sync`,
      );
      const t1 = performance.now();
      expect(await driver.hotplug.syncDisks(base, { useEmulation: true })).toEqual([]);
      const detachMs = performance.now() - t1;
      expect((await serial.run('ls /sys/block')).split(/\s+/)).not.toContain(dev);
      const buf = Buffer.alloc(marker.length);
      const fd = openSync(backing, 'r');
      readSync(fd, buf, 0, buf.length, SECTOR * 512);
      closeSync(fd);
      expect(buf.toString()).toBe(marker);
      expect(serial.output.split(guest.BOOT_MARKER).length - 1).toBe(1);
      process.stdout.write(
        `block hotplug through the libvirt driver: attach ${attachMs.toFixed(0)} ms, detach ${detachMs.toFixed(0)} ms\n`,
      );
    } finally {
      serial.close();
      await driver.delete(ref);
      await driver.close();
    }
  },
);
