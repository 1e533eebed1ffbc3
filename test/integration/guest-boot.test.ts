/**
 * Proves the tiny test guest image with plain virsh (no project code in the path): a
 * transient type='qemu' domain boots it by direct kernel boot, the boot marker appears on
 * the serial console, a command typed into the guest shell answers, and an ACPI shutdown
 * (`virsh shutdown`) powers the guest off.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  available,
  BOOT_MARKER,
  createDiskOverlay,
  DISK_MARKER,
  guestDomainXml,
  kernelVersion,
  makeGuestWorkDir,
  POWEROFF_MARKER,
  SerialConsole,
  unavailableReason,
  waitForFileText,
} from '../support/guest';
import { integration } from '../support/integration';

const URI = 'qemu:///system';

function virsh(...args: string[]): string {
  return execFileSync('virsh', ['-c', URI, ...args], { encoding: 'utf8' });
}

function libvirtAnswers(): boolean {
  return spawnSync('virsh', ['-c', URI, 'version'], { stdio: 'ignore' }).status === 0;
}

function domainExists(name: string): boolean {
  return spawnSync('virsh', ['-c', URI, 'domstate', name], { stdio: 'ignore' }).status === 0;
}

const ready = available() && libvirtAnswers();
const run = integration(
  'guest boot (virsh)',
  ready,
  available() ? `libvirtd does not answer on ${URI}` : unavailableReason,
);

describe.runIf(run)('tiny test guest under virsh', () => {
  const name = `kvts-guest-boot-${process.pid}`;
  let dir = '';
  let serialLog = '';
  let console_: SerialConsole | undefined;
  let bootLog = '';

  beforeAll(async () => {
    dir = makeGuestWorkDir();
    serialLog = join(dir, 'serial.log');
    const socket = join(dir, 'serial.sock');
    const xmlPath = join(dir, 'domain.xml');
    const xml = guestDomainXml({
      name,
      serialSocket: socket,
      serialLog,
      disk: createDiskOverlay(join(dir, 'disk.qcow2')),
    });
    execFileSync('tee', [xmlPath], { input: xml, stdio: ['pipe', 'ignore', 'inherit'] });
    const t0 = performance.now();
    virsh('create', xmlPath);
    const created = performance.now();
    console_ = await SerialConsole.connect(socket);
    bootLog = await waitForFileText(serialLog, BOOT_MARKER, 180_000);
    const t1 = performance.now();
    // The guest's own uptime at the marker separates kernel+userspace time from QEMU
    // start-up and firmware; a loaded host stretches all of them.
    const uptime = /uptime=([\d.]+)/.exec(bootLog)?.[1];
    console.log(
      `guest boot: virsh create -> ${BOOT_MARKER} in ${Math.round(t1 - t0)} ms ` +
        `(virsh create returned after ${Math.round(created - t0)} ms; guest uptime at marker ${uptime} s)`,
    );
  });

  afterAll(() => {
    console_?.close();
    if (domainExists(name)) spawnSync('virsh', ['-c', URI, 'destroy', name], { stdio: 'ignore' });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('prints the boot marker with the kernel it booted, then mounts the disk', async () => {
    expect(bootLog).toContain(`${BOOT_MARKER} kernel=${kernelVersion()}`);
    // The disk is mounted after the marker (its modules load only when a disk exists).
    expect(await waitForFileText(serialLog, DISK_MARKER, 60_000)).toContain(
      `${DISK_MARKER} ${kernelVersion()}`,
    );
  });

  it('answers a command typed into its shell', async () => {
    if (!console_) throw new Error('no serial console');
    // Wake the shell: ash prints its prompt on the console once it has a line.
    console_.write('\n');
    await console_.waitFor('guest# ');
    const out = await console_.run('echo $((6*7)); uname -r');
    expect(out.trim().split('\n')).toEqual(['42', kernelVersion()]);
  });

  it('powers off on virsh shutdown (ACPI power button)', async () => {
    virsh('shutdown', name);
    // A transient domain disappears once QEMU exits.
    const deadline = Date.now() + 60_000;
    while (domainExists(name)) {
      if (Date.now() > deadline) throw new Error(`domain ${name} still exists 60 s after virsh shutdown`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await waitForFileText(serialLog, POWEROFF_MARKER, 5_000)).toContain(POWEROFF_MARKER);
  });
});
