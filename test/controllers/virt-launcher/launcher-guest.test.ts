/**
 * A real boot through the launcher: the tiny test guest (direct kernel boot from the
 * local image store) converted by the converter, run by the libvirt driver under software
 * emulation on qemu:///system, its boot marker read from the launcher's console socket;
 * then an ACPI shutdown through the launcher and the domain forgotten on delete.
 */
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LauncherClient } from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { CONSOLE_SOCKET, VNC_SOCKET } from '../../../src/controllers/launcher-protocol/paths';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { BOOT_MARKER, POWEROFF_MARKER, SerialConsole } from '../../support/guest';
import { integration } from '../../support/integration';
import { waitFor } from '../../support/wait';
import {
  type RealLauncher,
  realLauncherBlocker,
  startRealLauncher,
  SYSTEM_URI as URI,
} from './real-launcher';
import { tinyGuestLauncherVmi as tinyGuestVmi } from './tiny-guest-vmi';

const blocker = realLauncherBlocker();
const run = integration('launcher real guest', !blocker, blocker ?? '');

describe.runIf(run)('virt-launcher boots the tiny guest under emulation', () => {
  const ns = 'kvts-e2e';
  const name = `launcher-${process.pid}`;
  const uid = `uid-launcher-${process.pid}`;
  let real: RealLauncher | undefined;
  let root = '';
  let launcher: VirtLauncher;
  let client: LauncherClient;
  let console_: SerialConsole;

  beforeAll(async () => {
    real = await startRealLauncher({
      ns,
      name,
      uid,
      rootPrefix: 'kvts-launcher-guest-',
      gracePeriodSeconds: 45,
      allowEmulation: true,
    });
    ({ root, launcher, client } = real);
    await client.syncVirtualMachine(tinyGuestVmi(ns, name, uid, '1Gi'));
    console_ = await SerialConsole.connect(join(real.sockets, CONSOLE_SOCKET));
  }, 120_000);

  afterAll(async () => {
    console_?.close();
    await real?.close();
  });

  it('runs the domain as type qemu and prints the boot marker on the console socket', async () => {
    const d = (await client.getDomain()) as LauncherDomain;
    expect(d).toMatchObject({ name: `${ns}_${name}`, state: 'running', console: CONSOLE_SOCKET });
    const xml = spawnSync('virsh', ['-c', URI, 'dumpxml', `${ns}_${name}`], { encoding: 'utf8' }).stdout;
    expect(xml).toMatch(/<domain type='qemu'/);
    expect(xml).toContain(`${root}/private/`);
    await console_.waitFor(BOOT_MARKER, 120_000);
  }, 130_000);

  it("relays QEMU's VNC server on the pod's vnc socket (the default graphics device): an RFB 3.8 handshake", async () => {
    for (let i = 0; i < 300 && !((await client.getDomain()) as LauncherDomain).vnc; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(((await client.getDomain()) as LauncherDomain).vnc).toBe(VNC_SOCKET);
    const xml = spawnSync('virsh', ['-c', URI, 'dumpxml', `${ns}_${name}`], { encoding: 'utf8' }).stdout;
    expect(xml).toMatch(/<graphics type='vnc' socket='[^']+'/);
    const banner = await new Promise<string>((resolve, reject) => {
      const s = connect(join(root, 'sockets', VNC_SOCKET));
      let got = Buffer.alloc(0);
      s.on('data', (d) => {
        got = Buffer.concat([got, d]);
        if (got.length >= 12) {
          s.destroy();
          resolve(got.subarray(0, 12).toString('latin1'));
        }
      });
      s.on('error', reject);
    });
    expect(banner).toBe('RFB 003.008\n');
  }, 60_000);

  it('hot-plugs a vCPU (SyncVirtualMachineCPUs: libvirt setvcpus): the guest gets cpu1 without a reboot', async () => {
    await console_.waitFor(BOOT_MARKER, 120_000);
    const vmi = tinyGuestVmi(ns, name, uid, '1Gi');
    // LiveUpdate's headroom: 4 sockets possible, 1 enabled.
    expect(vmi.spec.domain.cpu).toMatchObject({ sockets: 1, maxSockets: 4 });
    const count = () =>
      spawnSync('virsh', ['-c', URI, 'vcpucount', `${ns}_${name}`, '--live', '--active'], {
        encoding: 'utf8',
      }).stdout.trim();
    expect(count()).toBe('1');
    vmi.spec.domain.cpu = { ...vmi.spec.domain.cpu, sockets: 2 };
    await client.syncVirtualMachineCPUs(vmi);
    expect(count()).toBe('2');
    // The guest kernel took it by ACPI (offline: the tiny guest has no udev to online it).
    const seen = await waitFor(
      'cpu1 in the guest',
      async () => {
        const out = await console_.run('ls -d /sys/devices/system/cpu/cpu[0-9]*');
        return out.includes('/sys/devices/system/cpu/cpu1') ? out : undefined;
      },
      30_000,
      200,
    );
    expect(seen.match(/cpu\/cpu\d+/g)).toEqual(['cpu/cpu0', 'cpu/cpu1']);
    // Past the domain's maximum: libvirt refuses, the error reaches the handler.
    vmi.spec.domain.cpu = { ...vmi.spec.domain.cpu, sockets: 5 };
    await expect(client.syncVirtualMachineCPUs(vmi)).rejects.toThrow(/SyncVirtualMachineCPUs/);
    expect(count()).toBe('2');
  }, 90_000);

  it('hot-plugs memory (SyncVirtualMachineMemory: a virtio-mem device): MemTotal grows by 1 GiB, no reboot', async () => {
    const vmi = tinyGuestVmi(ns, name, uid, '1Gi');
    // LiveUpdate's headroom: maxGuest 4 x 1Gi.
    expect(vmi.spec.domain.memory).toMatchObject({ guest: '1Gi', maxGuest: '4Gi' });
    expect(vmi.status?.memory?.guestAtBoot).toBe('1Gi');
    const memTotal = async () =>
      Number(/MemTotal:\s+(\d+)/.exec(await console_.run('grep MemTotal /proc/meminfo'))?.[1]);
    const before = await memTotal();
    vmi.spec.domain.memory = { ...vmi.spec.domain.memory, guest: '2Gi' };
    await client.syncVirtualMachineMemory(vmi);
    const after = await waitFor(
      'MemTotal 1 GiB larger',
      async () => {
        const k = await memTotal();
        return k >= before + 1024 * 1024 * 0.95 ? k : undefined;
      },
      30_000,
      200,
    );
    expect(after - before).toBeLessThanOrEqual(1024 * 1024);
    const xml = spawnSync('virsh', ['-c', URI, 'dumpxml', `${ns}_${name}`], { encoding: 'utf8' }).stdout;
    expect(xml).toMatch(/<memory model='virtio-mem'>/);
    expect(xml).toMatch(/<requested unit='KiB'>1048576<\/requested>/);
    // Again: the device is there, its requested size is updated (3Gi: 2 GiB on the device).
    vmi.spec.domain.memory = { ...vmi.spec.domain.memory, guest: '3Gi' };
    await client.syncVirtualMachineMemory(vmi);
    await waitFor(
      'MemTotal 2 GiB larger',
      async () => (await memTotal()) >= before + 2 * 1024 * 1024 * 0.95,
      30_000,
      200,
    );
    const again = spawnSync('virsh', ['-c', URI, 'dumpxml', `${ns}_${name}`], { encoding: 'utf8' }).stdout;
    expect(again.match(/<memory model='virtio-mem'>/g)).toHaveLength(1);
    expect(again).toMatch(/<requested unit='KiB'>2097152<\/requested>/);
  }, 90_000);

  it('powers the guest off with an ACPI shutdown and forgets it on delete', async () => {
    await client.shutdownVirtualMachine(tinyGuestVmi(ns, name, uid, '1Gi'), 60);
    await console_.waitFor(POWEROFF_MARKER, 60_000);
    for (let i = 0; i < 600; i++) {
      const d = (await client.getDomain()) as LauncherDomain;
      if (d.finished) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await client.getDomain()) as LauncherDomain).toMatchObject({ state: 'shutoff', finished: true });
    expect(console_.output.split(BOOT_MARKER).length - 1).toBe(1);
    await client.deleteVirtualMachine(tinyGuestVmi(ns, name, uid, '1Gi'));
    expect(await launcher.exited).toBe(0);
    expect(spawnSync('virsh', ['-c', URI, 'domstate', `${ns}_${name}`]).status).not.toBe(0);
  }, 90_000);
});
