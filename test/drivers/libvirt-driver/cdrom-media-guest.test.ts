/**
 * CD-ROM media inserted and ejected through the libvirt driver with a real guest
 * (qemu:///system, software emulation; upstream's DeclarativeHotplugVolumes CD-ROM): the
 * tiny guest boots with an empty SATA cdrom drive (a `cdrom` disk without a volume); with
 * its AHCI and CD-ROM drivers loaded (/etc/load-cdrom, guest recipe 11) /dev/sr0 has no
 * medium. A hotpluggable volume for the drive whose file is in the hotplug directory is
 * inserted live (`hotplug.syncDisks`: virDomainUpdateDeviceFlags): the guest reads the
 * media's size and the marker written into the file; taking the volume out of the spec
 * ejects it: the guest has no medium again, the drive is still there, and QEMU holds no
 * descriptor on the file any more. The guest boots once.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import * as guest from '../../support/guest';
import { realGuestSuite, tinyGuestVmi } from './support';

const { run, scratch, leftovers } = realGuestSuite(
  'CD-ROM media inserted into and ejected from a real guest',
  'kvts-test-drv-cdrom-',
);

const SIZE = 8 * 1024 * 1024;

/** How many descriptors the QEMU processes hold on `file`. */
function qemuOpens(file: string): number {
  const pids = execFileSync('pgrep', ['-f', 'qemu-system'], { encoding: 'utf8' })
    .split(/\s+/)
    .filter(Boolean);
  let n = 0;
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone meanwhile
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === file) n++;
      } catch {
        // closed meanwhile
      }
    }
  }
  return n;
}
/** The marker's 2048-byte CD-ROM block. */
const BLOCK = 512;

it.skipIf(!run)(
  'inserts hotplugged media into an empty cdrom drive of a running guest, then ejects it',
  {
    timeout: 300_000,
  },
  async () => {
    const hotplugDir = join(scratch.dir, 'hotplug-disks');
    mkdirSync(hotplugDir, { mode: 0o777 });
    chmodSync(hotplugDir, 0o777);
    const img = join(hotplugDir, 'cd.img');
    const marker = `KVTS-CDROM-${process.pid}`;
    const fd = openSync(img, 'w', 0o666);
    writeSync(fd, `${marker}\n`, BLOCK * 2048);
    closeSync(fd);
    truncateSync(img, SIZE);
    chmodSync(img, 0o666);
    const base = tinyGuestVmi(`kvts-test-drv-cdrom-${process.pid}`);
    const ref = { namespace: 'kvts-drivers', name: base.metadata?.name as string };
    const driver = await LibvirtDriver.connect({
      uri: 'qemu:///system',
      name: 'emulation',
      allowKvm: false,
      converterContext: {
        paths: { ...scratch.paths, hotplugDiskDir: hotplugDir, kernelBootDir: realpathSync(guest.guestDir) },
      },
    });
    leftovers.push(async () => {
      await driver.delete(ref);
      await driver.close();
    });
    base.spec.domain.features = {};
    base.spec.domain.devices.disks = [{ name: 'cd', cdrom: { bus: 'sata' } }];
    const inserted: VirtualMachineInstance = structuredClone(base);
    inserted.spec.volumes = [{ name: 'cd', persistentVolumeClaim: { claimName: 'iso', hotpluggable: true } }];
    await driver.sync(base, { useEmulation: true });
    const serial = await guest.SerialConsole.connect((await driver.consoleEndpoint(ref)).path as string);
    try {
      await serial.waitFor(guest.BOOT_MARKER, 120_000);
      await serial.run('/etc/load-cdrom');
      let drive = '';
      for (let i = 0; i < 100 && !drive; i++) {
        drive = (await serial.run('ls /sys/block | grep ^sr')).trim();
        if (!drive) await new Promise((r) => setTimeout(r, 300));
      }
      expect(drive).toBe('sr0');
      /** What reading the marker's block says (opening the drive also revalidates its size). */
      const read = () => serial.run(`dd if=/dev/sr0 bs=2048 skip=${BLOCK} count=1 2>&1 | head -c 60; echo`);
      const size = async () => Number((await serial.run('cat /sys/block/sr0/size')).trim()) * 512;
      // (An empty drive's size in sysfs is sr_mod's placeholder, not 0: the open's error says it.)
      expect(await read()).toMatch(/No medium found/);

      const hotplug = driver.hotplug;
      const t0 = performance.now();
      expect(
        await hotplug.syncDisks(inserted, { useEmulation: true, hotplugReady: new Set(['cd']) }),
      ).toEqual(['cd']);
      const insertMs = performance.now() - t0;
      let seen = '';
      for (let i = 0; i < 50 && !seen.includes(marker); i++) {
        seen = await read();
        if (!seen.includes(marker)) await new Promise((r) => setTimeout(r, 200));
      }
      expect(seen).toContain(marker);
      expect(await size()).toBe(SIZE);

      // QEMU reads the media file while it is in, and lets it go on the eject (a claim's
      // filesystem must be free to leave the node once the media is out).
      expect(qemuOpens(img)).toBe(1);
      const t1 = performance.now();
      expect(await hotplug.syncDisks(base, { useEmulation: true })).toEqual([]);
      const ejectMs = performance.now() - t1;
      let after = '';
      for (let i = 0; i < 50 && !/No medium found/.test(after); i++) {
        after = await read();
        if (!/No medium found/.test(after)) await new Promise((r) => setTimeout(r, 200));
      }
      expect(after).toMatch(/No medium found/);
      expect(qemuOpens(img)).toBe(0);
      expect((await serial.run('ls /sys/block | grep ^sr')).trim()).toBe('sr0');
      expect(serial.output.split(guest.BOOT_MARKER).length - 1).toBe(1);
      process.stdout.write(
        `CD-ROM media through the libvirt driver: insert ${insertMs.toFixed(0)} ms, eject ${ejectMs.toFixed(0)} ms\n`,
      );
    } finally {
      serial.close();
      await driver.delete(ref);
      await driver.close();
    }
  },
);
