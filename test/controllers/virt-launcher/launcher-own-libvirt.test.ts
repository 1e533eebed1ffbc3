/**
 * The launcher's own libvirt: composed as `kubevirt-ts virt-launcher` composes it (no
 * `KUBEVIRT_TS_LIBVIRT_URI`, pod mounts in `KUBEVIRT_TS_MOUNTS` as the local pod runtime
 * passes them), the launcher starts a session-mode virtqemud/libvirtd and a virtlogd as
 * user 107 with every socket and state file in the pod's libvirt-runtime directory, boots
 * the tiny guest there (QEMU started by that daemon as user 107, in this process's
 * cgroups), the host's libvirtd never sees the domain, and stopping the launcher stops
 * the guest and both daemons and leaves QEMU's probed capabilities in the shared cache.
 * The VMI's libvirt log filters (`kubevirt.io/libvirt-log-filters`, here QEMU process
 * debug lines) reach the daemon: its debug lines are in its log file and the launcher's stderr.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from 'vitest';
import { MOUNTS_ENV } from '../../../src/controllers/common/path-map';
import {
  createLauncherContainer,
  LauncherTokens,
} from '../../../src/controllers/composition/launcher-container';
import { LauncherClient } from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { CONSOLE_SOCKET } from '../../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../../src/controllers/launcher-protocol/short-dir';
import { IMAGE_ROOT_ENV } from '../../../src/controllers/virt-launcher/image-dirs';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { daemonDirs, findLibvirtDaemon } from '../../../src/controllers/virt-launcher/libvirt-daemons';
import { BOOT_MARKER, SerialConsole } from '../../support/guest';
import { integration } from '../../support/integration';
import {
  emulationLauncherArgs,
  makeLauncherRoot,
  realLauncherBlocker,
  tinyGuestImageStore,
} from './real-launcher';
import { tinyGuestLauncherVmi } from './tiny-guest-vmi';

function blocker(): string | undefined {
  const b = realLauncherBlocker();
  if (b) return b;
  if (process.getuid?.() !== 0) return 'needs root (the daemons are started as user 107)';
  try {
    findLibvirtDaemon();
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
}
const why = blocker();
/** QEMU process debug lines only, everything else at warnings. */
const FILTERS = '1:qemu.qemu_process 3:*';
const run = integration('launcher own libvirt', !why, why ?? '');

/** Pids whose parent is `ppid`, with their executable's name. */
function children(ppid: number): Array<{ pid: number; comm: string }> {
  const out = spawnSync('ps', ['-o', 'pid=,comm=', '--ppid', String(ppid)], { encoding: 'utf8' }).stdout;
  return out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [pid, comm] = l.trim().split(/\s+/);
      return { pid: Number(pid), comm: comm ?? '' };
    });
}

function uidOf(pid: number): number {
  const m = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1]);
}

describe.runIf(run)('virt-launcher runs its own libvirt daemons', () => {
  const ns = 'kvts-e2e';
  const name = `own-libvirt-${process.pid}`;
  const uid = `uid-own-libvirt-${process.pid}`;
  let root = '';
  let runtime = '';
  let launcher: VirtLauncher;
  let client: LauncherClient;
  let serial: SerialConsole;
  let exitCode: number | undefined;
  let stderrSpy: MockInstance<typeof process.stderr.write>;

  beforeAll(async () => {
    root = makeLauncherRoot('kvts-own-libvirt-');
    const images = tinyGuestImageStore(root);
    // The local pod runtime's layout: one host directory per emptyDir, deep enough that
    // the daemon's sockets need the short links.
    const vol = (n: string) => join(root, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', n);
    const mounts: Record<string, string> = {
      '/var/run/kubevirt-private': vol('private'),
      '/var/run/kubevirt': vol('public'),
      '/var/run/kubevirt/sockets': vol('sockets'),
      '/var/run/libvirt': vol('libvirt-runtime'),
      '/var/run/kubevirt-ephemeral-disks': vol('ephemeral-disks'),
      '/var/run/kubevirt/container-disks': vol('container-disks'),
    };
    for (const d of Object.values(mounts)) mkdirSync(d, { recursive: true, mode: 0o755 });
    spawnSync('chmod', ['-R', 'a+rX', root]);
    runtime = mounts['/var/run/libvirt'] as string;
    const args = emulationLauncherArgs({
      ns,
      name,
      uid,
      gracePeriodSeconds: 30,
      allowEmulation: true,
      libvirtLogFilters: FILTERS,
    });
    stderrSpy = vi.spyOn(process.stderr, 'write');
    launcher = createLauncherContainer({
      args,
      env: {
        PATH: process.env.PATH,
        [MOUNTS_ENV]: JSON.stringify(mounts),
        [IMAGE_ROOT_ENV]: images,
        KUBEVIRT_TS_LIBVIRT_CAPS_CACHE: join(root, 'caps-cache'),
      },
      finalWaitMs: 1_000,
    }).get<VirtLauncher>(LauncherTokens.launcher);
    void launcher.exited.then((c) => {
      exitCode = c;
    });
    await launcher.start();
    const sockets = shortDir(mounts['/var/run/kubevirt/sockets'] as string);
    client = new LauncherClient(join(sockets, 'launcher-sock'), { timeoutMs: 60_000 });
    await client.syncVirtualMachine(tinyGuestLauncherVmi(ns, name, uid));
    serial = await SerialConsole.connect(join(sockets, CONSOLE_SOCKET));
  }, 120_000);

  afterAll(async () => {
    stderrSpy?.mockRestore();
    serial?.close();
    client?.close();
    if (exitCode === undefined) await launcher?.exit(0);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("boots the guest on a daemon of its own: daemons are its children, they and QEMU run as 107, QEMU in this process's cgroups", async () => {
    await serial.waitFor(BOOT_MARKER, 120_000);
    const d = (await client.getDomain()) as LauncherDomain;
    expect(d).toMatchObject({ name: `${ns}_${name}`, state: 'running' });

    const daemon = children(process.pid).find((c) => c.comm === 'libvirtd' || c.comm === 'virtqemud');
    const logd = children(process.pid).find((c) => c.comm === 'virtlogd');
    expect(daemon, 'the QEMU daemon is a child of the launcher').toBeDefined();
    expect(logd, 'virtlogd is a child of the launcher').toBeDefined();
    expect(uidOf(daemon?.pid ?? 0)).toBe(107);
    expect(uidOf(logd?.pid ?? 0)).toBe(107);

    const pidFile = join(daemonDirs(runtime).run, 'libvirt', 'qemu', 'run', `${ns}_${name}.pid`);
    const qemuPid = Number(readFileSync(pidFile, 'utf8').trim());
    // libvirt daemonizes QEMU (it is reparented), so it is found through the daemon's pid file.
    expect(readFileSync(`/proc/${qemuPid}/cmdline`, 'utf8').split('\0')).toContain(
      `guest=${ns}_${name},debug-threads=on`,
    );
    expect(uidOf(qemuPid)).toBe(107);
    expect(readFileSync(`/proc/${qemuPid}/cgroup`, 'utf8')).toBe(
      readFileSync(`/proc/${process.pid}/cgroup`, 'utf8'),
    );

    // The daemon's socket is in the pod's libvirt-runtime directory, and the host's
    // libvirtd knows nothing of the domain.
    expect(existsSync(join(daemonDirs(runtime).run, 'libvirt'))).toBe(true);
    const sysList = spawnSync('virsh', ['-c', 'qemu:///system', 'list', '--all', '--name'], {
      encoding: 'utf8',
    });
    expect(sysList.stdout).not.toContain(`${ns}_${name}`);
    expect(realpathSync(runtime)).toBe(runtime);

    // The filters: qemu_process's debug lines (the domain's start) in the daemon's log file,
    // and the same lines on the launcher's stderr (its container log); rpc stays quiet.
    const debug = /debug : qemuProcessStart/;
    expect(readFileSync(join(runtime, 'qemu-daemon.log'), 'utf8')).toMatch(debug);
    const written = stderrSpy.mock.calls.map((c) => String(c[0])).join('');
    expect(written).toMatch(debug);
    expect(written).not.toMatch(/debug : virNetServer/);
  }, 130_000);

  it('stops the guest and both daemons when the launcher stops', async () => {
    const daemons = children(process.pid).filter((c) =>
      ['libvirtd', 'virtqemud', 'virtlogd'].includes(c.comm),
    );
    expect(daemons.length).toBe(2);
    const code = await launcher.stop(10);
    expect(code).toBe(0);
    for (const p of daemons) expect(existsSync(`/proc/${p.pid}/status`) && uidOf(p.pid) === 107).toBe(false);
    // The QEMU capabilities the daemon probed are shared with the next launcher of the host.
    expect(
      readdirSync(join(root, 'caps-cache')).filter((f) => /^[0-9a-f]{64}\.xml$/.test(f)).length,
    ).toBeGreaterThan(0);
  }, 60_000);
});
