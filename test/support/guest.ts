/**
 * The tiny test guest built by scripts/guest/build.sh (a Debian kernel and a busybox
 * initramfs, plus a small ext4 qcow2 disk), and helpers to boot it and talk to its serial
 * console. The guest prints {@link BOOT_MARKER} on ttyS0 once userspace is up, keeps a
 * shell on ttyS0, and powers off on the ACPI power button (`virsh shutdown`) once the
 * marker has been printed (its acpid starts just before).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from './integration';

/** Printed on the serial console when the guest's userspace is up. */
export const BOOT_MARKER = 'KUBEVIRT-TS-GUEST-BOOTED';
/** Printed (followed by the kernel version) when the guest mounted the project's disk. */
export const DISK_MARKER = 'KUBEVIRT-TS-DISK-MOUNTED';
/** Printed by the guest when it handles the ACPI power button. */
export const POWEROFF_MARKER = 'KUBEVIRT-TS-GUEST: ACPI power button, powering off';
/** Kernel command line for direct kernel boot: serial console, quiet, no reboot on panic. */
export const KERNEL_CMDLINE = 'console=ttyS0 quiet panic=-1';

/** Directory holding the current guest build (`current` symlink made by the build). */
export const guestDir = join(cacheDir, 'guest', 'current');
export const kernelPath = join(guestDir, 'vmlinuz');
export const initrdPath = join(guestDir, 'initrd.img');
/** Read-only base disk: attach an overlay from {@link createDiskOverlay}, never this file. */
export const diskPath = join(guestDir, 'disk.qcow2');
/**
 * Read-only bootable disk (FAT + syslinux) holding the same kernel and initramfs, booted
 * by the firmware with no direct kernel boot. Boot an overlay of it, never this file.
 */
export const bootDiskPath = join(guestDir, 'boot.qcow2');

/** True when the guest artifacts exist (scripts/guest/build.sh has run). */
export function available(): boolean {
  return [kernelPath, initrdPath, diskPath, bootDiskPath].every((p) => existsSync(p));
}

/** Why the guest tests skip when {@link available} is false. */
export const unavailableReason = `the test guest is not built (${guestDir}): run scripts/guest/build.sh`;

/** The kernel version of the current build, e.g. `6.1.0-57-amd64`. */
export function kernelVersion(): string {
  return readFileSync(join(guestDir, 'kernel-version'), 'utf8').trim();
}

/**
 * A scratch directory QEMU (which runs as the libvirt-qemu user) may create sockets and
 * files in.
 */
export function makeGuestWorkDir(prefix = 'kvts-guest-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o777);
  return dir;
}

/**
 * Creates a qcow2 overlay backed by a guest disk ({@link diskPath} by default, or
 * {@link bootDiskPath}), so each VM writes its own file.
 */
export function createDiskOverlay(path: string, base: string = diskPath): string {
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', realpathSync(base), path]);
  chmodSync(path, 0o666);
  return path;
}

function xmlEscape(s: string): string {
  return s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Options of {@link guestDomainXml}. */
export interface GuestDomainOptions {
  /** Domain name: letters, digits, `-`, `_`, `.` only. */
  name: string;
  /** Unix socket QEMU binds for the serial console. */
  serialSocket: string;
  /** File the serial output is also logged to (written by virtlogd), so no byte is lost. */
  serialLog?: string;
  /** A qcow2 overlay to attach as virtio disk vda. */
  disk?: string;
  /**
   * Boot from this disk (an overlay of {@link bootDiskPath}) through the firmware instead
   * of direct kernel boot; it becomes vda and `disk` is ignored.
   */
  bootDisk?: string;
  memoryMiB?: number;
}

/**
 * Domain XML for booting the guest directly (kernel + initrd) under software emulation
 * (type `qemu`: KVM guests hang on this host), serial console on a unix socket.
 */
export function guestDomainXml(opts: GuestDomainOptions): string {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(opts.name)) {
    throw new Error(`guest domain name ${JSON.stringify(opts.name)}: use [A-Za-z0-9_.-], 1-64 chars`);
  }
  const log = opts.serialLog ? `<log file='${xmlEscape(opts.serialLog)}' append='off'/>` : '';
  const vda = opts.bootDisk ?? opts.disk;
  const disk = vda
    ? `<disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='${xmlEscape(vda)}'/><target dev='vda' bus='virtio'/></disk>`
    : '';
  const os = opts.bootDisk
    ? "<boot dev='hd'/>"
    : `<kernel>${xmlEscape(realpathSync(kernelPath))}</kernel>
    <initrd>${xmlEscape(realpathSync(initrdPath))}</initrd>
    <cmdline>${KERNEL_CMDLINE}</cmdline>`;
  return `<domain type='qemu'>
  <name>${opts.name}</name>
  <memory unit='MiB'>${opts.memoryMiB ?? 128}</memory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    ${os}
  </os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    ${disk}
    <serial type='unix'>
      <source mode='bind' path='${xmlEscape(opts.serialSocket)}'/>
      ${log}
      <target port='0'/>
    </serial>
    <memballoon model='none'/>
  </devices>
</domain>
`;
}

/**
 * Waits until `file` (e.g. a serial log written by virtlogd) contains `text` (a string, or
 * a pattern, e.g. for a whole line: the log can hold half a line when it is read); returns
 * the file's content. Reading the log never loses output written before a client connected.
 */
export async function waitForFileText(
  file: string,
  text: string | RegExp,
  timeoutMs = 60_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const content = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (typeof text === 'string' ? content.includes(text) : text.test(content)) return content;
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${String(typeof text === 'string' ? JSON.stringify(text) : text)} in ${file}; content:\n${content}`,
      );
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * A client of the guest's serial console socket: collects everything it reads and lets a
 * test wait for text and type commands into the guest shell.
 */
export class SerialConsole {
  private buffer = '';
  private waiters: Array<() => void> = [];
  private closed = false;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      for (const w of this.waiters) w();
    });
    socket.on('close', () => {
      this.closed = true;
      for (const w of this.waiters) w();
    });
  }

  /** Connects to a serial unix socket, retrying while QEMU has not created it yet. */
  static async connect(path: string, timeoutMs = 30_000): Promise<SerialConsole> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const s = connect(path);
          s.once('connect', () => resolve(s));
          s.once('error', reject);
        });
        return new SerialConsole(socket);
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`serial console ${path}: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** Everything read so far. */
  get output(): string {
    return this.buffer;
  }

  /** Resolves with the output once `pattern` appears after offset `from`. */
  waitFor(pattern: string | RegExp, timeoutMs = 60_000, from = 0): Promise<string> {
    const matches = () =>
      typeof pattern === 'string'
        ? this.buffer.indexOf(pattern, from) >= 0
        : pattern.test(this.buffer.slice(from));
    return new Promise((resolve, reject) => {
      const check = () => {
        if (matches()) {
          done();
          resolve(this.buffer);
        } else if (this.closed) {
          done();
          reject(new Error(`serial console closed before ${String(pattern)}; output:\n${this.buffer}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${String(pattern)}; output:\n${this.buffer}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
      };
      this.waiters.push(check);
      check();
    });
  }

  /**
   * Types `command` into the guest shell and returns the text between two unique
   * sentinels the command's output is wrapped in (the typed echo never matches them).
   * Whole lines of the guest's own boot reports (`KUBEVIRT-TS-GUEST-...`, written to
   * /dev/console by background scripts, e.g. the SSH one a second after the network's)
   * are left out: they can land between the sentinels.
   */
  async run(command: string, timeoutMs = 30_000): Promise<string> {
    const tag = `KVTS${Math.random().toString(36).slice(2, 10)}`;
    const from = this.buffer.length;
    // `$((1))` keeps the typed line from containing the expanded sentinel.
    this.socket.write(`echo ${tag}-BEGIN-$((1)); ${command}; echo ${tag}-END-$((1))\n`);
    const re = new RegExp(`${tag}-BEGIN-1\\r?\\n([\\s\\S]*?)${tag}-END-1`);
    await this.waitFor(re, timeoutMs, from);
    const m = re.exec(this.buffer.slice(from));
    return (m?.[1] ?? '').replace(/\r/g, '').replace(/^KUBEVIRT-TS-GUEST-[A-Z]+ .*\n/gm, '');
  }

  /** Writes raw text to the console. */
  write(text: string): void {
    this.socket.write(text);
  }

  close(): void {
    this.socket.destroy();
  }
}
