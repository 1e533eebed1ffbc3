/**
 * A real launcher on the real libvirtd for integration tests: a temp root whose local
 * image store holds the tiny test guest (`kubevirt-ts/tiny-guest`), the pod's private and
 * sockets directories, a {@link VirtLauncher} on the emulation driver and a
 * {@link LauncherClient} on its socket; `close()` undoes all of it. What the test then
 * syncs, and how it watches the guest, stays in the test.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LauncherArgs, parseLauncherArgs } from '../../../src/controllers/common/launcher-args';
import { PathMap } from '../../../src/controllers/common/path-map';
import { LauncherClient } from '../../../src/controllers/launcher-protocol';
import { launcherDriverFactories } from '../../../src/controllers/virt-launcher/drivers';
import { imageDir } from '../../../src/controllers/virt-launcher/image-dirs';
import { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { launcherConverterPaths } from '../../../src/controllers/virt-launcher/launcher-paths';
import type { SyncOptions } from '../../../src/drivers/driver';
import { available, guestDir, unavailableReason } from '../../support/guest';

/** The system libvirtd the real launcher tests run their domains on. */
export const SYSTEM_URI = 'qemu:///system';

/** Why a real-launcher test cannot run here (no test guest, libvirtd silent), or undefined. */
export function realLauncherBlocker(uri = SYSTEM_URI): string | undefined {
  if (!available()) return unavailableReason;
  if (spawnSync('virsh', ['-c', uri, 'version'], { stdio: 'ignore' }).status !== 0) {
    return `libvirtd does not answer on ${uri}`;
  }
  return undefined;
}

/** Destroys and undefines domain `dom` on `uri`, ignoring that it may not exist. */
export function forgetDomain(dom: string, uri = SYSTEM_URI): void {
  spawnSync('virsh', ['-c', uri, 'destroy', dom], { stdio: 'ignore' });
  spawnSync('virsh', ['-c', uri, 'undefine', dom], { stdio: 'ignore' });
}

/** A world-readable temp dir (QEMU runs as another user) to remove with `rmSync(root, { recursive: true })`. */
export function makeLauncherRoot(prefix: string): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(root, 0o755);
  return root;
}

/** Creates `<root>/images`, a local image store holding the tiny guest as `kubevirt-ts/tiny-guest`; returns it. */
export function tinyGuestImageStore(root: string): string {
  const images = join(root, 'images');
  mkdirSync(images, { mode: 0o755 });
  symlinkSync(guestDir, imageDir(images, 'kubevirt-ts/tiny-guest'));
  return images;
}

/** The parsed command line of a launcher for `ns/name` (`uid`) on the emulation hypervisor. */
export function emulationLauncherArgs(a: {
  ns: string;
  name: string;
  uid: string;
  gracePeriodSeconds: number;
  allowEmulation?: boolean;
  /** The VMI's `kubevirt.io/libvirt-log-filters`, as virt-controller passes it. */
  libvirtLogFilters?: string;
}): LauncherArgs {
  return parseLauncherArgs([
    '--namespace',
    a.ns,
    '--name',
    a.name,
    '--uid',
    a.uid,
    '--grace-period-seconds',
    String(a.gracePeriodSeconds),
    '--hypervisor',
    'emulation',
    ...(a.allowEmulation ? ['--allow-emulation'] : []),
    ...(a.libvirtLogFilters ? ['--libvirt-log-filters', a.libvirtLogFilters] : []),
  ]);
}

/** Options of {@link startRealLauncher}. */
export interface RealLauncherOptions {
  ns: string;
  name: string;
  uid: string;
  /** libvirt URI the driver connects to and `close()` cleans up on (default qemu:///system). */
  uri?: string;
  /**
   * An existing root whose `images` store holds the tiny guest (from {@link tinyGuestImageStore}),
   * shared by several launchers and removed by its owner; default: a fresh root that `close()` removes.
   */
  root?: string;
  /** Temp-dir prefix of a fresh root (default `kvts-launcher-`). */
  rootPrefix?: string;
  /** The pod's directory under the root (default: the root itself). */
  podDir?: string;
  gracePeriodSeconds?: number;
  /** Passes `--allow-emulation` to the launcher arguments. */
  allowEmulation?: boolean;
  /** Extra driver environment on top of `KUBEVIRT_TS_LIBVIRT_URI`. */
  env?: NodeJS.ProcessEnv;
  /** How `sync` treats the VMI (default `{ useEmulation: true }`). */
  syncOptions?: SyncOptions;
  migrationPollMs?: number;
  finalWaitMs?: number;
}

/** A started real launcher; see {@link startRealLauncher}. */
export interface RealLauncher {
  /** The temp root (images store, and the pod directories). */
  root: string;
  /** The pod's `private` directory. */
  privateDir: string;
  /** The pod's `sockets` directory (launcher-sock, console, vnc). */
  sockets: string;
  launcher: VirtLauncher;
  client: LauncherClient;
  /** The libvirt domain name, `<ns>_<name>`. */
  dom: string;
  /** Closes the client, stops the launcher, forgets the domain and removes a root it created. */
  close(): Promise<void>;
}

/** Starts a launcher on the emulation driver against real libvirt, with a client on its socket. */
export async function startRealLauncher(opts: RealLauncherOptions): Promise<RealLauncher> {
  const { ns, name, uid } = opts;
  const uri = opts.uri ?? SYSTEM_URI;
  const gracePeriodSeconds = opts.gracePeriodSeconds ?? 30;
  const ownsRoot = !opts.root;
  const root = opts.root ?? makeLauncherRoot(opts.rootPrefix ?? 'kvts-launcher-');
  const images = ownsRoot ? tinyGuestImageStore(root) : join(root, 'images');
  const base = opts.podDir ? join(root, opts.podDir) : root;
  const privateDir = join(base, 'private');
  const sockets = join(base, 'sockets');
  mkdirSync(privateDir, { recursive: true, mode: 0o755 });
  mkdirSync(sockets, { mode: 0o700 });
  const args = emulationLauncherArgs({
    ns,
    name,
    uid,
    gracePeriodSeconds,
    allowEmulation: opts.allowEmulation,
  });
  const paths = launcherConverterPaths(args, new PathMap({ '/var/run/kubevirt-private': privateDir }));
  const env = { KUBEVIRT_TS_LIBVIRT_URI: uri, ...opts.env };
  const launcher = new VirtLauncher({
    namespace: ns,
    name,
    uid,
    gracePeriodSeconds,
    socketDir: sockets,
    connectDriver: () => launcherDriverFactories.emulation({ paths, imageRoot: images, env }),
    syncOptions: opts.syncOptions ?? { useEmulation: true },
    ...(opts.migrationPollMs !== undefined ? { migrationPollMs: opts.migrationPollMs } : {}),
    ...(opts.finalWaitMs !== undefined ? { finalWaitMs: opts.finalWaitMs } : {}),
    log: () => {},
  });
  const dom = `${ns}_${name}`;
  try {
    await launcher.start();
  } catch (e) {
    if (ownsRoot) rmSync(root, { recursive: true, force: true });
    throw e;
  }
  const client = new LauncherClient(join(sockets, 'launcher-sock'), { timeoutMs: 60_000 });
  return {
    root,
    privateDir,
    sockets,
    launcher,
    client,
    dom,
    async close() {
      client.close();
      await launcher.exit(0);
      forgetDomain(dom, uri);
      if (ownsRoot) rmSync(root, { recursive: true, force: true });
    },
  };
}
