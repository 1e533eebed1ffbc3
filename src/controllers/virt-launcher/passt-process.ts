/**
 * passt for a passtBinding interface when libvirt cannot start it (its domain capabilities
 * list no `passt` interface backend: Debian 12's libvirt 9.0.0; drivers/passt-backend.ts).
 * The launcher then does what libvirt's qemu_passt.c would: in the pod's network namespace
 * (the launcher runs there) and as QEMU's account, it starts Debian's passt on the
 * interface's socket before the domain starts, and the domain attaches QEMU to that socket
 * through `<qemu:commandline>` (converter/configurators/passt-qemu.ts).
 *
 * passt runs in the foreground as the launcher's child with `--one-off` (it quits when
 * QEMU, its one client, disconnects: its life is the domain's), a pid file next to its
 * socket in the VMI's private directory, `--interface eth0` and the declared ports (all of
 * TCP and UDP when none are declared, as upstream's passt plugin asks libvirt for). It is
 * stopped, and its socket and pid file removed, when the domain fails to start and when
 * the launcher exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, rm } from 'node:fs/promises';
import type { VirtualMachineInstance, Interface as VMIInterface } from '../../api/generated/types';
import { passtPidPath, passtPortArgs, passtPorts, passtSocketPath } from '../../converter/passt';
import type { HypervisorDriver } from '../../drivers/driver';
import { passtBackendFor } from '../../drivers/passt-backend';
import { SOCKET_PATH_MAX } from '../launcher-protocol/short-dir';

/** The pod interface passt takes its addresses and routes from (the converter's `<source dev>`). */
export const PASST_POD_INTERFACE = 'eth0';
/** What passt prints once its socket listens. */
const READY = 'You can now start qemu';
const IFNAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$/;

/** What one passt is started with. */
export interface PasstArgsInput {
  /** The VMI's private directory (`<privateDir>/<uid>`): the socket and pid file. */
  dir: string;
  iface: VMIInterface;
  /** The interface's field path, for errors. */
  path: string;
  podInterface?: string;
  /** The account to drop to when started as root (QEMU's); none keeps passt's own choice. */
  runAs?: { uid: number; gid: number };
}

/** A file path for passt's argv: absolute, one line, no control characters. */
function checkedPath(p: string, what: string, max = 4095): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (!p.startsWith('/') || /[\u0000-\u001f\u007f]/.test(p) || p.length > max)
    throw new Error(`passt: ${what} ${JSON.stringify(p)} is not an absolute path of at most ${max} bytes`);
  return p;
}

/**
 * passt's arguments for `input`, every value checked (paths absolute and single-line, the
 * socket within a unix socket path's length, the interface name, ports and account
 * numeric): nothing a user wrote reaches passt's argv unchecked. Passed as an argument
 * array, never through a shell.
 */
export function passtArgs(input: PasstArgsInput): string[] {
  const podIf = input.podInterface ?? PASST_POD_INTERFACE;
  if (!IFNAME.test(podIf)) throw new Error(`passt: ${JSON.stringify(podIf)} is not an interface name`);
  const ports = passtPorts(input.iface, input.path, (p, m) => {
    throw new Error(`${p}: ${m}`);
  });
  const args = [
    '--foreground',
    '--one-off',
    '--socket',
    checkedPath(passtSocketPath(input.dir), 'socket', SOCKET_PATH_MAX),
    '--pid',
    checkedPath(passtPidPath(input.dir), 'pid file'),
    '--interface',
    podIf,
    ...passtPortArgs(ports),
  ];
  if (input.runAs) {
    const { uid, gid } = input.runAs;
    if (![uid, gid].every((n) => Number.isInteger(n) && n >= 0 && n < 2 ** 32))
      throw new Error(`passt: ${uid}:${gid} is not a numeric user and group`);
    args.push('--runas', `${uid}:${gid}`);
  }
  return args;
}

/** Options of {@link PasstBackend}. */
export interface PasstBackendOptions {
  /** The converter's private directory (`paths.privateDir`; the VMI's is `<it>/<uid>`). */
  privateDir: string;
  /** QEMU's account: passt runs as it and its directory is handed to it. */
  qemuUser?: { uid: number; gid: number };
  /** The passt binary (default /usr/bin/passt, as libvirt runs it). */
  binary?: string;
  /** How long passt may take to listen, ms (default 15 s). */
  readyTimeoutMs?: number;
  log: (m: string) => void;
}

/** The passt the launcher starts for the VMI's passtBinding interface, if libvirt does not. */
export class PasstBackend {
  private child: ChildProcess | undefined;
  private dir: string | undefined;
  private libvirtRunsPasst: boolean | undefined;
  private output = '';

  constructor(private readonly opts: PasstBackendOptions) {}

  /** The running passt's pid, if any. */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /**
   * Starts passt before the domain's start when the VMI has a passtBinding interface and
   * the driver's libvirt cannot run passt itself; does nothing when one was already started.
   */
  async start(vmi: VirtualMachineInstance, driver: HypervisorDriver): Promise<void> {
    const ifaces = vmi.spec.domain.devices.interfaces ?? [];
    const index = ifaces.findIndex((i) => i.passtBinding && i.state !== 'absent');
    if (index < 0 || this.child) return;
    this.libvirtRunsPasst ??= passtBackendFor(await driver.probe()) === 'libvirt';
    if (this.libvirtRunsPasst) return;
    const uid = vmi.metadata?.uid;
    if (!uid || !/^[a-zA-Z0-9][a-zA-Z0-9._-]*$/.test(uid))
      throw new Error(`passt: metadata.uid ${JSON.stringify(uid)} cannot name a directory`);
    const dir = `${this.opts.privateDir}/${uid}`;
    const root = (process.getuid?.() ?? 0) === 0;
    const runAs = root ? this.opts.qemuUser : undefined;
    const args = passtArgs({
      dir,
      iface: ifaces[index],
      path: `spec.domain.devices.interfaces[${index}]`,
      runAs,
    });
    // passt creates its socket after dropping to QEMU's account: the directory must be its.
    // The private dir stays traversable (QEMU's account reaches its sockets through it).
    await mkdir(this.opts.privateDir, { recursive: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (runAs) await chown(dir, runAs.uid, runAs.gid);
    await this.removeFiles(dir);
    this.dir = dir;
    const binary = this.opts.binary ?? (existsSync('/usr/bin/passt') ? '/usr/bin/passt' : 'passt');
    this.opts.log(`passt: starting ${binary} ${args.join(' ')}`);
    this.output = '';
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (err?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const timer = setTimeout(
        () =>
          settle(
            new Error(`passt did not listen within ${this.opts.readyTimeoutMs ?? 15_000} ms: ${this.said()}`),
          ),
        this.opts.readyTimeoutMs ?? 15_000,
      );
      const onData = (b: Buffer) => {
        this.output = (this.output + b.toString('utf8')).slice(-8192);
        if (this.output.includes(READY)) settle();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.on('error', (e) => settle(new Error(`passt: ${e.message}`)));
      child.on('exit', (code, signal) => {
        this.opts.log(`passt: exited (${signal ?? `code ${code}`})`);
        settle(new Error(`passt exited (${signal ?? `code ${code}`}) before listening: ${this.said()}`));
        void this.removeFiles(dir);
      });
    }).catch(async (e) => {
      await this.stop();
      throw e;
    });
    this.opts.log(`passt: pid ${child.pid} listening on ${passtSocketPath(dir)}`);
  }

  /** What passt printed, without its complaints about a missing syslog. */
  private said(): string {
    return this.output
      .split('\n')
      .filter((l) => l.trim() && !/^Failed to send \d+ bytes to syslog/.test(l))
      .join('; ')
      .slice(-1000);
  }

  /** Stops passt (TERM, KILL after 2 s) and removes its socket and pid file. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
      await gone;
      clearTimeout(timer);
    }
    if (this.dir) await this.removeFiles(this.dir);
  }

  private async removeFiles(dir: string): Promise<void> {
    await rm(passtSocketPath(dir), { force: true }).catch(() => undefined);
    await rm(passtPidPath(dir), { force: true }).catch(() => undefined);
  }
}
