/**
 * A second libvirtd on this host, to be the target of a real live migration. libvirt
 * refuses to migrate a guest to the host it runs on (same host UUID), so this daemon
 * runs in a private mount and UTS namespace (`unshare -mu`) with fresh directories bound
 * over /run/libvirt, /var/lib/libvirt, /var/cache/libvirt, /var/log/libvirt and
 * /etc/libvirt, its own `host_uuid` and host name, and its own virtlogd. It shares the
 * network namespace, so QEMU's migration stream goes over loopback, and its socket is
 * reachable from outside at `<dir>/run/libvirt-sock`. Needs root, `unshare`, libvirtd.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** A running second daemon. */
export interface SecondLibvirtd {
  /** Its directory (state, config, logs). */
  readonly dir: string;
  /** Its unix socket, reachable from this mount namespace. */
  readonly socketPath: string;
  /** The URI another daemon reaches it at (`qemu+unix:///system?socket=...`). */
  readonly uri: string;
  /** The host UUID it reports (differs from the system daemon's). */
  readonly hostUuid: string;
  /** Its libvirtd log, for failure messages. */
  log(): string;
  /** Destroys its domains, stops it and its virtlogd, removes its directory. */
  stop(): Promise<void>;
}

const virsh = (uri: string, ...args: string[]) =>
  spawnSync('virsh', ['-c', uri, ...args], { encoding: 'utf8', timeout: 30_000 });

/** Why a second daemon cannot run here, or undefined when it can. */
export function secondLibvirtdUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (mount namespaces and bind mounts)';
  for (const bin of ['unshare', 'libvirtd', 'virtlogd', 'virsh']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  }
  if (!existsSync('/etc/libvirt/qemu.conf')) return '/etc/libvirt/qemu.conf is missing';
  return undefined;
}

/** Starts a second daemon and waits until it answers. */
export async function startSecondLibvirtd(timeoutMs = 30_000): Promise<SecondLibvirtd> {
  const why = secondLibvirtdUnavailable();
  if (why) throw new Error(`second libvirtd: ${why}`);
  // Short path: QEMU and libvirt sockets live below it.
  const dir = mkdtempSync('/tmp/kvd-');
  chmodSync(dir, 0o755);
  for (const sub of ['run', 'lib', 'cache', 'log', 'etc', 'etc/qemu']) {
    mkdirSync(join(dir, sub), { mode: 0o755 });
  }
  for (const f of ['qemu.conf', 'virtlogd.conf', 'libvirt.conf']) {
    if (existsSync(join('/etc/libvirt', f))) copyFileSync(join('/etc/libvirt', f), join(dir, 'etc', f));
  }
  // QEMU's capabilities probed by the system daemon (keyed by binary and libvirt version):
  // without them the new daemon probes every emulator again, which takes seconds.
  const caps = '/var/cache/libvirt/qemu/capabilities';
  if (existsSync(caps)) cpSync(caps, join(dir, 'cache', 'qemu', 'capabilities'), { recursive: true });
  const hostUuid = randomUUID();
  writeFileSync(
    join(dir, 'etc', 'libvirtd.conf'),
    [
      `host_uuid = "${hostUuid}"`,
      'unix_sock_rw_perms = "0700"',
      'auth_unix_rw = "none"',
      'auth_unix_ro = "none"',
      `log_outputs = "3:file:${dir}/libvirtd.log"`,
      '',
    ].join('\n'),
  );
  const script = [
    'set -e',
    'mount --make-rprivate /',
    'hostname kvts-migration-target',
    `mount --bind ${dir}/run /run/libvirt`,
    `mount --bind ${dir}/lib /var/lib/libvirt`,
    `mount --bind ${dir}/cache /var/cache/libvirt`,
    `mount --bind ${dir}/log /var/log/libvirt`,
    `mount --bind ${dir}/etc /etc/libvirt`,
    `virtlogd -d -p ${dir}/virtlogd.pid`,
    `exec libvirtd -p ${dir}/libvirtd.pid -f /etc/libvirt/libvirtd.conf`,
  ].join('\n');
  writeFileSync(join(dir, 'start.sh'), script);
  const out = join(dir, 'out.log');
  const fd = openSync(out, 'w');
  const child: ChildProcess = spawn('unshare', ['-mu', 'sh', join(dir, 'start.sh')], {
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  child.unref();
  const socketPath = join(dir, 'run', 'libvirt-sock');
  const uri = `qemu+unix:///system?socket=${socketPath}`;
  const log = () => {
    try {
      return (
        readFileSync(join(dir, 'libvirtd.log'), 'utf8') + (existsSync(out) ? readFileSync(out, 'utf8') : '')
      );
    } catch {
      return '';
    }
  };
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async () => {
    const names = virsh(uri, 'list', '--name').stdout?.split('\n').filter(Boolean) ?? [];
    for (const n of names) virsh(uri, 'destroy', n);
    for (const n of virsh(uri, 'list', '--all', '--name').stdout?.split('\n').filter(Boolean) ?? []) {
      virsh(uri, 'undefine', n);
    }
    if (child.exitCode === null && child.pid) {
      process.kill(child.pid, 'SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    }
    try {
      const pid = Number(readFileSync(join(dir, 'virtlogd.pid'), 'utf8').trim());
      if (pid > 1) process.kill(pid, 'SIGTERM');
    } catch {
      // virtlogd never started.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (existsSync(socketPath) && virsh(uri, 'version').status === 0) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      const text = log();
      await stop();
      throw new Error(`second libvirtd did not come up:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { dir, socketPath, uri, hostUuid, log, stop };
}
