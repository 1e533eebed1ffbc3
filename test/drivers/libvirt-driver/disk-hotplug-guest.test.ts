/**
 * Volume hotplug through the libvirt driver with a real guest (qemu:///system, software
 * emulation): the tiny guest boots with spare PCIe root ports (hotplug-ports.ts), a raw
 * file in the hotplug directory is attached live as a virtio disk with a serial
 * (`hotplug.syncDisks` once the volume is ready), the guest sees the serial and the size
 * and writes to the disk; taking the volume out of the spec detaches it, the guest loses
 * it, and the data is in the file. A NIC on an existing tap is plugged (`nicHotplug`: the
 * guest gets an ethN with its MAC) and unplugged (it goes). Then the driver's memory dump of the running guest
 * (`memoryDump.dump`: virDomainCoreDumpWithFormat, memory-only) is an ELF core (`readelf -h`)
 * of the guest's RAM, and the guest keeps running. The guest boots once.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  truncateSync,
} from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { tapName } from '../../../src/converter/configurators/interfaces';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import * as guest from '../../support/guest';
import { realGuestSuite, tinyGuestVmi } from './support';

const { run, scratch, leftovers } = realGuestSuite(
  'volume hotplug into a real guest through the libvirt driver',
  'kvts-test-drv-hotplug-',
);

const SIZE = 24 * 1024 * 1024;
const SECTOR = 2048;

it.skipIf(!run)(
  'attaches a ready hotplug disk live with its serial, the guest writes to it, detach removes it; a NIC plugs and unplugs; a memory dump is an ELF core',
  {
    timeout: 300_000,
  },
  async () => {
    const hotplugDir = join(scratch.dir, 'hotplug-disks');
    mkdirSync(hotplugDir, { mode: 0o777 });
    chmodSync(hotplugDir, 0o777);
    const img = join(hotplugDir, 'data.img');
    // Sparse, the size the guest must report; QEMU runs as another user.
    closeSync(openSync(img, 'w', 0o666));
    chmodSync(img, 0o666);
    truncateSync(img, SIZE);
    const base = tinyGuestVmi(`kvts-test-drv-hotplug-${process.pid}`);
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
    // As admission defaults it: an empty features block gives the guest ACPI (and so QEMU's
    // q35 tables, whose PCI hotplug the guest handles; SeaBIOS's fallback tables do not).
    base.spec.domain.features = {};
    const withVolume: VirtualMachineInstance = structuredClone(base);
    withVolume.spec.volumes = [
      { name: 'data', persistentVolumeClaim: { claimName: 'data', hotpluggable: true } },
    ];
    withVolume.spec.domain.devices.disks = [{ name: 'data', disk: { bus: 'virtio' }, serial: 'HPSERIAL1' }];
    // At boot the volume is not ready: the domain starts without it.
    await driver.sync(withVolume, { useEmulation: true });
    const serial = await guest.SerialConsole.connect((await driver.consoleEndpoint(ref)).path as string);
    try {
      await serial.waitFor(guest.BOOT_MARKER, 120_000);
      expect(await serial.run('ls /sys/block')).not.toContain('vd');
      const hotplug = driver.hotplug;
      const t0 = performance.now();
      expect(
        await hotplug.syncDisks(withVolume, { useEmulation: true, hotplugReady: new Set(['data']) }),
      ).toEqual(['data']);
      const attachMs = performance.now() - t0;
      // The guest's PCIe hotplug brings the virtio disk up.
      let dev = '';
      for (let i = 0; i < 100 && !dev; i++) {
        dev = (await serial.run('ls /sys/block | grep ^vd')).trim();
        if (!dev) await new Promise((r) => setTimeout(r, 300));
      }
      expect(dev).toMatch(/^vd[a-z]$/);
      expect((await serial.run(`cat /sys/block/${dev}/serial`)).trim()).toBe('HPSERIAL1');
      expect(Number((await serial.run(`cat /sys/block/${dev}/size`)).trim()) * 512).toBe(SIZE);
      const marker = `KVTS-HOTPLUG-${process.pid}`;
      await serial.run(
        `echo ${marker} | dd of=/dev/${dev} bs=512 seek=${SECTOR} conv=notrunc,fsync 2>/dev/null; sync`,
      );
      // Taken out of the spec: detached, and gone from the guest.
      const t1 = performance.now();
      expect(await hotplug.syncDisks(base, { useEmulation: true })).toEqual([]);
      const detachMs = performance.now() - t1;
      expect((await serial.run('ls /sys/block')).split(/\s+/)).not.toContain(dev);
      const data = readFileSync(img)
        .subarray(SECTOR * 512, SECTOR * 512 + marker.length)
        .toString();
      expect(data).toBe(marker);
      // NIC hotplug (nic-hotplug.ts): a bridge interface on a secondary network whose tap
      // (the converter's name for it) exists, attached live, then unplugged. The tap is
      // left down on the host: nothing the guest sends leaves it.
      const net = `nh${process.pid}`;
      const tap = tapName(net, false);
      execFileSync('ip', ['tuntap', 'add', 'dev', tap, 'mode', 'tap']);
      leftovers.push(async () => {
        execFileSync('ip', ['link', 'del', tap], { stdio: 'ignore' });
      });
      const mac = '02:00:00:4e:48:01';
      const nic = { name: net, bridge: {}, macAddress: mac };
      const withNic: VirtualMachineInstance = structuredClone(base);
      withNic.spec.domain.devices.interfaces = [nic];
      withNic.spec.networks = [{ name: net, multus: { networkName: 'nad' } }];
      const nics = (await serial.run('ls /sys/class/net')).split(/\s+/).filter((n) => n.startsWith('eth'));
      expect(await driver.nicHotplug.syncInterfaces(withNic, new Set(), { useEmulation: true })).toEqual([]);
      const t3 = performance.now();
      expect(await driver.nicHotplug.syncInterfaces(withNic, new Set([net]), { useEmulation: true })).toEqual(
        [net],
      );
      const nicAttachMs = performance.now() - t3;
      let eth = '';
      for (let i = 0; i < 100 && !eth; i++) {
        const now = (await serial.run('ls /sys/class/net')).split(/\s+/).filter((n) => n.startsWith('eth'));
        eth = now.find((n) => !nics.includes(n)) ?? '';
        if (!eth) await new Promise((r) => setTimeout(r, 300));
      }
      expect(eth).toMatch(/^eth\d$/);
      expect((await serial.run(`cat /sys/class/net/${eth}/address`)).trim()).toBe(mac);
      withNic.spec.domain.devices.interfaces = [{ ...nic, state: 'absent' }];
      const t4 = performance.now();
      expect(await driver.nicHotplug.syncInterfaces(withNic, new Set([net]), { useEmulation: true })).toEqual(
        [],
      );
      const nicDetachMs = performance.now() - t4;
      expect((await serial.run('ls /sys/class/net')).split(/\s+/)).not.toContain(eth);
      // Memory dump of the running guest (virtctl memory-dump's last step).
      const dump = join(scratch.dir, 'vm.memory.dump');
      const t2 = performance.now();
      await driver.memoryDump.dump(ref, dump);
      const dumpMs = performance.now() - t2;
      const header = execFileSync('readelf', ['-h', '-l', '-W', dump], { encoding: 'utf8' });
      expect(header).toMatch(/Type:\s+CORE \(Core file\)/);
      // The booted guest is in long mode: QEMU writes an x86-64 core, its RAM one PT_LOAD.
      expect(header).toMatch(/Machine:\s+Advanced Micro Devices X86-64/);
      expect(header).toMatch(/^\s+LOAD\s+\S+\s+0x0+\s+0x0+\s+0x8000000\s/m);
      const size = statSync(dump).size;
      expect(size).toBeGreaterThanOrEqual(128 * 1024 * 1024);
      expect(size).toBeLessThan(136 * 1024 * 1024);
      expect((await driver.getDomain(ref))?.state).toBe('running');
      expect((await serial.run('echo still-$((6*7))')).trim()).toBe('still-42');
      rmSync(dump, { force: true });
      expect(serial.output.split(guest.BOOT_MARKER).length - 1).toBe(1);
      process.stdout.write(
        `hotplug through the libvirt driver: attach ${attachMs.toFixed(0)} ms, detach ${detachMs.toFixed(0)} ms; NIC attach ${nicAttachMs.toFixed(0)} ms, detach ${nicDetachMs.toFixed(0)} ms; memory dump of 128 MiB ${dumpMs.toFixed(0)} ms\n`,
      );
    } finally {
      serial.close();
      await driver.delete(ref);
      await driver.close();
    }
  },
);
