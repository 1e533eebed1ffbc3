/**
 * Proves the tiny test guest images with plain virsh (no project code in the path):
 * transient type='qemu' domains boot it, one by direct kernel boot (with the ext4 data
 * disk) and one from the bootable disk image through the firmware. The boot marker
 * appears on the serial console, a command typed into the guest shell answers, and an
 * ACPI shutdown (`virsh shutdown`) powers each guest off. Both boot at once to keep the
 * suite short.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  available,
  BOOT_MARKER,
  bootDiskPath,
  createDiskOverlay,
  DISK_MARKER,
  type GuestDomainOptions,
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

/** One transient domain booting the guest, with its serial console. */
class BootedGuest {
  readonly serialLog: string;
  readonly socket: string;
  console: SerialConsole | undefined;
  bootLog = '';

  constructor(
    readonly name: string,
    readonly dir: string,
    private readonly options: Omit<GuestDomainOptions, 'name' | 'serialSocket' | 'serialLog'>,
  ) {
    this.serialLog = join(dir, `${name}.log`);
    this.socket = join(dir, `${name}.sock`);
  }

  /** `virsh create`; returns when virsh returns. */
  create(): number {
    const xmlPath = join(this.dir, `${this.name}.xml`);
    writeFileSync(
      xmlPath,
      guestDomainXml({
        ...this.options,
        name: this.name,
        serialSocket: this.socket,
        serialLog: this.serialLog,
      }),
    );
    const t0 = performance.now();
    virsh('create', xmlPath);
    return t0;
  }

  /** Waits for the boot marker and logs the time since `t0` with the guest's own uptime. */
  async booted(t0: number): Promise<void> {
    this.console = await SerialConsole.connect(this.socket);
    // The whole marker line: the first read can end in its middle (kernel=6.1.0-...).
    this.bootLog = await waitForFileText(this.serialLog, new RegExp(`${BOOT_MARKER}[^\n]*\n`), 180_000);
    // The guest's uptime at the marker separates kernel+userspace time from QEMU start-up
    // and firmware; a loaded host stretches all of them.
    const uptime = /uptime=([\d.]+)/.exec(this.bootLog)?.[1];
    console.log(
      `guest boot (${this.name}): virsh create -> ${BOOT_MARKER} in ${Math.round(performance.now() - t0)} ms ` +
        `(guest uptime at marker ${uptime} s)`,
    );
  }

  async shutdownAndWait(): Promise<void> {
    virsh('shutdown', this.name);
    // A transient domain disappears once QEMU exits.
    const deadline = Date.now() + 60_000;
    while (domainExists(this.name)) {
      if (Date.now() > deadline)
        throw new Error(`domain ${this.name} still exists 60 s after virsh shutdown`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  cleanup(): void {
    this.console?.close();
    if (domainExists(this.name)) spawnSync('virsh', ['-c', URI, 'destroy', this.name], { stdio: 'ignore' });
  }
}

describe.runIf(run)('tiny test guest under virsh', () => {
  let dir = '';
  let direct: BootedGuest;
  let fromDisk: BootedGuest;

  beforeAll(async () => {
    dir = makeGuestWorkDir();
    direct = new BootedGuest(`kvts-guest-direct-${process.pid}`, dir, {
      disk: createDiskOverlay(join(dir, 'data.qcow2')),
    });
    fromDisk = new BootedGuest(`kvts-guest-diskboot-${process.pid}`, dir, {
      bootDisk: createDiskOverlay(join(dir, 'boot.qcow2'), bootDiskPath),
    });
    const t0 = direct.create();
    const t1 = fromDisk.create();
    // Waited for here: the hook timeout, not a test's, bounds a boot on a loaded host.
    await Promise.all([direct.booted(t0), fromDisk.booted(t1)]);
  });

  afterAll(() => {
    direct?.cleanup();
    fromDisk?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('direct kernel boot', () => {
    it('prints the boot marker with the kernel it booted, then mounts the data disk', async () => {
      expect(direct.bootLog).toContain(`${BOOT_MARKER} kernel=${kernelVersion()}`);
      // The disk is mounted after the marker (its modules load only when a disk exists).
      expect(await waitForFileText(direct.serialLog, DISK_MARKER, 60_000)).toContain(
        `${DISK_MARKER} ${kernelVersion()}`,
      );
    });

    it('answers a command typed into its shell', async () => {
      const serial = direct.console;
      if (!serial) throw new Error('no serial console');
      // Wake the shell: ash prints its prompt on the console once it has a line.
      serial.write('\n');
      await serial.waitFor('guest# ');
      const out = await serial.run('echo $((6*7)); uname -r');
      expect(out.trim().split('\n')).toEqual(['42', kernelVersion()]);
    });

    it('powers off on virsh shutdown (ACPI power button)', async () => {
      await direct.shutdownAndWait();
      expect(await waitForFileText(direct.serialLog, POWEROFF_MARKER, 5_000)).toContain(POWEROFF_MARKER);
    });
  });

  describe('bootable disk image (syslinux)', () => {
    it('boots the same kernel from the disk through the firmware', async () => {
      expect(fromDisk.bootLog).toContain(`${BOOT_MARKER} kernel=${kernelVersion()}`);
    });

    it('powers off on virsh shutdown (ACPI power button)', async () => {
      await fromDisk.shutdownAndWait();
      expect(await waitForFileText(fromDisk.serialLog, POWEROFF_MARKER, 5_000)).toContain(POWEROFF_MARKER);
    });
  });
});
