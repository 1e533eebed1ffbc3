/**
 * The launcher's own libvirt: one `virtqemud` (libvirt's modular QEMU daemon; Debian 12
 * ships only the monolithic `libvirtd`, which is used then) and one `virtlogd` per
 * launcher, started and owned by it as upstream's virt-launcher does (StartVirtqemud,
 * StartVirtlog in pkg/virt-launcher/virtwrap/util/libvirt_helper.go). Both run as an
 * unprivileged user in libvirt's session mode, so every socket, config, log and state
 * file lives in the pod's `libvirt-runtime` directory (XDG_RUNTIME_DIR, XDG_CONFIG_HOME,
 * XDG_CACHE_HOME point there), nothing touches the host's libvirt, and QEMU (their
 * child) stays in the launcher's cgroup: session mode places no process in cgroups of
 * its own. A daemon that dies is started again after a second, as upstream's loop does;
 * the driver's reconnect loop then finds the new socket.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { chown, copyFile, mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

/** Upstream's non-root user and group (the `qemu` account of its images). */
export const NON_ROOT_ID = 107;

/** Where the daemons live, and as whom. */
export interface LibvirtDaemonsOptions {
  /** Host directory of the pod's `libvirt-runtime` volume (sockets, state, logs). */
  runtimeDir: string;
  /**
   * XDG_CONFIG_HOME (default `<runtimeDir>/config`): QEMU's monitor and channel sockets
   * lie deepest under it (`libvirt/qemu/channel/target/domain-N-<name>/org.qemu.guest_agent.0`,
   * up to 82 bytes), so it must be at most about 24 bytes long: a short link where needed.
   */
  configDir?: string;
  /** User and group the daemons (and so QEMU) run as; default: the launcher's own, or 107 when it is root. */
  user?: { uid: number; gid: number };
  /** The daemon binary; default `virtqemud` when installed, else `libvirtd`. */
  daemon?: string;
  /** `virtlogd`'s path (default /usr/sbin/virtlogd). */
  virtlogd?: string;
  /**
   * A directory of QEMU capabilities files shared by the launchers of this host: copied
   * into the new daemon's cache before it starts and filled from it when it stops. A
   * fresh daemon otherwise probes QEMU (runs it and queries it over QMP) before its first
   * domain, seconds under TCG on a loaded host; libvirt re-probes by itself when a cached
   * file no longer matches (another QEMU or libvirt binary, kernel, /dev/kvm access).
   */
  capsCacheDir?: string;
  /**
   * libvirt log filters (./../logging/libvirt-debug-logs.ts): written to the QEMU daemon's
   * configuration with an output at debug level, and its log lines then also go to the
   * launcher's stderr (the container log, as upstream's), not only to its file.
   */
  logFilters?: string;
  /** How long to wait for the daemon's socket, ms (default 15 s). */
  readyTimeoutMs?: number;
  log?: (message: string) => void;
}

/** How the launcher's driver reaches its daemon. */
export interface LibvirtEndpoint {
  uri: string;
  socketPath: string;
  /** The account the daemon runs QEMU as. */
  qemuUser: { uid: number; gid: number };
}

const SBIN = ['/usr/sbin', '/usr/local/sbin', '/usr/bin'];

/** The QEMU daemon to run: virtqemud where installed, else libvirtd. */
export function findLibvirtDaemon(): { path: string; socket: string } {
  for (const dir of SBIN) {
    const p = join(dir, 'virtqemud');
    if (existsSync(p)) return { path: p, socket: 'virtqemud-sock' };
  }
  for (const dir of SBIN) {
    const p = join(dir, 'libvirtd');
    if (existsSync(p)) return { path: p, socket: 'libvirt-sock' };
  }
  throw new Error(
    'virt-launcher: neither virtqemud nor libvirtd is installed (Debian: libvirt-daemon-driver-qemu)',
  );
}

/** Bytes a session daemon puts under XDG_CONFIG_HOME for a socket path, at most. */
export const CONFIG_SOCKET_BUDGET = 82;

/** The directories of one launcher's daemons under its runtime dir. */
export function daemonDirs(runtimeDir: string, configDir = join(runtimeDir, 'config')) {
  return {
    /** XDG_RUNTIME_DIR: sockets in `libvirt/`, QEMU state in `libvirt/qemu/run/`. */
    run: join(runtimeDir, 'run'),
    /** XDG_CONFIG_HOME: domain definitions, QEMU monitor and channel sockets (`libvirt/qemu/`). */
    config: configDir,
    /** XDG_CACHE_HOME: QEMU logs (`libvirt/qemu/log/<domain>.log`). */
    cache: join(runtimeDir, 'cache'),
    home: join(runtimeDir, 'home'),
  };
}

/** One launcher's virtqemud (or libvirtd) and virtlogd. */
export class LibvirtDaemons {
  private readonly user: { uid: number; gid: number };
  private readonly daemon: { path: string; socket: string };
  private readonly children = new Map<string, ChildProcess>();
  private stopped = false;
  private started: Promise<LibvirtEndpoint> | undefined;
  private readonly log: (m: string) => void;

  constructor(private readonly opts: LibvirtDaemonsOptions) {
    const own = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    this.user = opts.user ?? (own.uid === 0 ? { uid: NON_ROOT_ID, gid: NON_ROOT_ID } : own);
    this.daemon = opts.daemon
      ? { path: opts.daemon, socket: opts.daemon.endsWith('virtqemud') ? 'virtqemud-sock' : 'libvirt-sock' }
      : findLibvirtDaemon();
    this.log = opts.log ?? ((m) => process.stderr.write(`virt-launcher: ${m}\n`));
  }

  /** The user QEMU runs as (files it must write are handed to it). */
  get qemuUser(): { uid: number; gid: number } {
    return { ...this.user };
  }

  /** The daemon's socket. */
  get socketPath(): string {
    return join(daemonDirs(this.opts.runtimeDir).run, 'libvirt', this.daemon.socket);
  }

  /** Starts both daemons once; resolves when the QEMU daemon's socket is there. */
  start(): Promise<LibvirtEndpoint> {
    this.started ??= this.startOnce();
    return this.started;
  }

  private async startOnce(): Promise<LibvirtEndpoint> {
    const t0 = performance.now();
    const dirs = daemonDirs(this.opts.runtimeDir, this.opts.configDir);
    for (const d of Object.values(dirs)) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      if (statSync(d).uid !== this.user.uid) chownSync(d, this.user.uid, this.user.gid);
    }
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: dirs.home,
      XDG_RUNTIME_DIR: dirs.run,
      XDG_CONFIG_HOME: dirs.config,
      XDG_CACHE_HOME: dirs.cache,
    };
    await this.seedCapabilities(dirs.cache);
    if (this.opts.logFilters) await this.writeLogConfig(dirs.config, this.opts.logFilters);
    // Both at once: the QEMU daemon needs virtlogd only when a domain starts.
    this.supervise('virtlogd', this.opts.virtlogd ?? '/usr/sbin/virtlogd', env);
    this.supervise('qemu-daemon', this.daemon.path, env);
    await this.waitForSocket(this.opts.readyTimeoutMs ?? 15_000);
    this.log(`${basename(this.daemon.path)} and virtlogd started (${Math.round(performance.now() - t0)} ms)`);
    return { uri: 'qemu:///session', socketPath: this.socketPath, qemuUser: this.qemuUser };
  }

  /**
   * The session daemon reads `$XDG_CONFIG_HOME/libvirt/<daemon>.conf`. The filters passed
   * admission and the launcher's args check (libvirt's grammar, no quote or line break).
   */
  private async writeLogConfig(config: string, filters: string): Promise<void> {
    const dir = join(config, 'libvirt');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chown(dir, this.user.uid, this.user.gid).catch(() => undefined);
    const file = join(dir, `${basename(this.daemon.path)}.conf`);
    await writeFile(file, `log_filters="${filters}"\nlog_outputs="1:stderr"\n`, { mode: 0o600 });
    await chown(file, this.user.uid, this.user.gid).catch(() => undefined);
    this.log(`libvirt log filters: ${filters}`);
  }

  /** The daemon's QEMU capabilities cache directory. */
  private capsDir(cache = daemonDirs(this.opts.runtimeDir, this.opts.configDir).cache): string {
    return join(cache, 'libvirt', 'qemu', 'cache', 'capabilities');
  }

  private async seedCapabilities(cache: string): Promise<void> {
    const shared = this.opts.capsCacheDir;
    if (!shared) return;
    const files = await readdir(shared).catch(() => [] as string[]);
    if (!files.some((f) => f.endsWith('.xml'))) return;
    const own = this.capsDir(cache);
    for (const d of [
      join(cache, 'libvirt'),
      join(cache, 'libvirt', 'qemu'),
      join(cache, 'libvirt', 'qemu', 'cache'),
      own,
    ]) {
      await mkdir(d, { recursive: true, mode: 0o700 });
      await chown(d, this.user.uid, this.user.gid).catch(() => undefined);
    }
    for (const f of files.filter((n) => /^[0-9a-f]{64}\.xml$/.test(n))) {
      await copyFile(join(shared, f), join(own, f));
      await chown(join(own, f), this.user.uid, this.user.gid).catch(() => undefined);
    }
  }

  /** Puts the daemon's capabilities files into the shared cache where it lacks them. */
  private async shareCapabilities(): Promise<void> {
    const shared = this.opts.capsCacheDir;
    if (!shared) return;
    const own = this.capsDir();
    const files = (await readdir(own).catch(() => [] as string[])).filter((n) =>
      /^[0-9a-f]{64}\.xml$/.test(n),
    );
    if (files.length === 0) return;
    await mkdir(shared, { recursive: true, mode: 0o755 });
    const have = new Set(await readdir(shared).catch(() => [] as string[]));
    for (const f of files.filter((n) => !have.has(n))) {
      // Written under a temporary name and renamed: a launcher starting meanwhile never reads half a file.
      const tmp = join(shared, `.${f}.${process.pid}`);
      await copyFile(join(own, f), tmp);
      await rename(tmp, join(shared, f));
    }
  }

  private supervise(key: string, bin: string, env: NodeJS.ProcessEnv): void {
    if (this.stopped) return;
    // The daemons' own log lines (errors at start-up about D-Bus and udev are expected in
    // a pod) go to a file beside their sockets, not into the launcher's log.
    const logFd = openSync(join(this.opts.runtimeDir, `${key}.log`), 'a', 0o600);
    // With debug logs on, the QEMU daemon's stderr is also the launcher's.
    const forward = key === 'qemu-daemon' && !!this.opts.logFilters;
    let child: ChildProcess;
    try {
      child = spawn(bin, [], {
        env,
        cwd: daemonDirs(this.opts.runtimeDir).home,
        stdio: ['ignore', logFd, forward ? 'pipe' : logFd],
        ...(this.user.uid !== (process.getuid?.() ?? 0) ? { uid: this.user.uid, gid: this.user.gid } : {}),
      });
    } finally {
      if (!forward) closeSync(logFd);
    }
    if (forward && child.stderr) {
      child.stderr.on('data', (d: Buffer) => {
        writeSync(logFd, d);
        process.stderr.write(d);
      });
      child.stderr.on('close', () => closeSync(logFd));
    }
    this.children.set(key, child);
    child.on('error', (e) => this.log(`${bin}: ${e.message}`));
    child.on('exit', (code, signal) => {
      this.children.delete(key);
      if (this.stopped) return;
      this.log(`${bin} exited (${signal ?? `code ${code}`}); starting it again in 1 s`);
      setTimeout(() => this.supervise(key, bin, env), 1_000).unref();
    });
  }

  private async waitForSocket(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      if (existsSync(this.socketPath)) return;
      if (this.stopped) throw new Error('virt-launcher: libvirt daemons stopped while starting');
      if (Date.now() > deadline) {
        throw new Error(
          `virt-launcher: ${this.daemon.path} did not create ${this.socketPath} within ${timeoutMs} ms (see ${join(this.opts.runtimeDir, 'qemu-daemon.log')})`,
        );
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /** Stops both daemons (QEMU is gone by then: the launcher stops after its domain). */
  async stop(): Promise<void> {
    this.stopped = true;
    const waits = [...this.children.values()].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const kill = setTimeout(() => c.kill('SIGKILL'), 3_000);
          c.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          c.kill('SIGTERM');
        }),
    );
    await Promise.all(waits);
    await this.shareCapabilities().catch((e) => this.log(`capabilities cache: ${(e as Error).message}`));
  }
}
