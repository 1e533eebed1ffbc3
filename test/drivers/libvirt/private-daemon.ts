/**
 * A private libvirtd for tests that stop and restart the daemon, so the shared system
 * daemon other tests use is never touched. It runs as `nobody` in session mode with its
 * own XDG directories under a temp dir, listening on `<dir>/run/libvirt/libvirt-sock`;
 * root (the test) can still connect, and `test:///default` works in it.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const NOBODY_UID = 65534;
const NOGROUP_GID = 65534;

/** Why a private daemon cannot run here, or null when it can. */
export function privateDaemonUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'needs root to start libvirtd as nobody';
  for (const bin of ['libvirtd', 'setpriv']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  }
  return null;
}

function waitForSocket(p: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = net.createConnection({ path: p });
      s.once('connect', () => {
        s.destroy();
        resolve();
      });
      s.once('error', () => {
        if (Date.now() > deadline)
          reject(new Error(`private libvirtd did not listen on ${p} within ${timeoutMs} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/** One private daemon; `start`, `stop`, `pause`, `resume`, `dispose`. */
export class PrivateDaemon {
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'kvts-libvirt-daemon-'));
  readonly socketPath = path.join(this.dir, 'run', 'libvirt', 'libvirt-sock');
  private child: ChildProcess | null = null;

  constructor() {
    for (const d of ['', 'run', 'config', 'cache', 'data']) {
      const p = path.join(this.dir, d);
      mkdirSync(p, { recursive: true, mode: 0o700 });
      chownSync(p, NOBODY_UID, NOGROUP_GID);
    }
  }

  /** Starts libvirtd and resolves once its socket accepts connections. */
  async start(): Promise<void> {
    if (this.child) throw new Error('private libvirtd already running');
    rmSync(this.socketPath, { force: true });
    const env = {
      PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: this.dir,
      XDG_RUNTIME_DIR: path.join(this.dir, 'run'),
      XDG_CONFIG_HOME: path.join(this.dir, 'config'),
      XDG_CACHE_HOME: path.join(this.dir, 'cache'),
      XDG_DATA_HOME: path.join(this.dir, 'data'),
    };
    // setpriv execs libvirtd, so the child pid is the daemon's own pid. `--timeout` makes an
    // orphan (a killed test run) exit by itself after 5 idle minutes.
    const child = spawn(
      'setpriv',
      [`--reuid=${NOBODY_UID}`, `--regid=${NOGROUP_GID}`, '--clear-groups', 'libvirtd', '--timeout', '300'],
      { env, cwd: this.dir, stdio: 'ignore' },
    );
    this.child = child;
    child.once('exit', () => {
      if (this.child === child) this.child = null;
    });
    await waitForSocket(this.socketPath, 30_000);
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Stops the daemon (SIGTERM, then SIGKILL) and waits until it has exited. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGCONT');
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    this.child = null;
  }

  /** Freezes the daemon (SIGSTOP): its socket stays open but nothing answers. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async dispose(): Promise<void> {
    await this.stop('SIGKILL');
    if (existsSync(this.dir)) rmSync(this.dir, { recursive: true, force: true });
  }
}
