/**
 * Copies of a test pool's mount in other processes' mount namespaces. This host's root
 * mount is private (no systemd to make it shared), so a mount namespace made while a
 * pool is mounted (libvirt's per-QEMU namespace, `ip netns exec`, `unshare -m`) keeps its
 * own copy of the pool mount, and our unmount does not reach it: the pool's loop device
 * stays bound until that process exits. A full run hit it: another file's QEMU, started
 * while a cluster file's pool was mounted, held the pool's loop device past its cleanup.
 * Such a copy is not the driver's leak; the leftover checks unmount it where it is and
 * say so, and still fail on what no other namespace explains.
 */
import { execFileSync } from 'node:child_process';
import { readdir, readFile, readlink } from 'node:fs/promises';

/** A mount of one of the devices in another mount namespace. */
export interface ForeignMount {
  pid: number;
  comm: string;
  /** The mount point as that process sees it. */
  mountPoint: string;
  /** `major:minor` of the mounted device. */
  device: string;
}

/** The `major:minor` numbers of loop devices (`/dev/loopN`), from sysfs. */
async function deviceNumbers(loops: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const l of loops) {
    const name = l.replace('/dev/', '');
    const dev = await readFile(`/sys/block/${name}/dev`, 'utf8').catch(() => '');
    if (dev.trim()) out.set(dev.trim(), l);
  }
  return out;
}

/** Mounts of the loop devices `loops` in mount namespaces other than this process's (one process per namespace). */
export async function foreignMountsOf(loops: string[]): Promise<ForeignMount[]> {
  const devices = await deviceNumbers(loops);
  if (!devices.size) return [];
  const own = await readlink('/proc/self/ns/mnt');
  const seen = new Set<string>([own]);
  const found: ForeignMount[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const ns = await readlink(`/proc/${entry}/ns/mnt`).catch(() => undefined);
    if (!ns || seen.has(ns)) continue;
    seen.add(ns);
    const info = await readFile(`/proc/${entry}/mountinfo`, 'utf8').catch(() => '');
    for (const line of info.split('\n')) {
      const f = line.split(' ');
      if (f[2] && devices.has(f[2]) && f[4]) {
        const comm = (await readFile(`/proc/${entry}/comm`, 'utf8').catch(() => '?')).trim();
        found.push({ pid: Number(entry), comm, mountPoint: f[4], device: f[2] });
      }
    }
  }
  return found;
}

/** Unmounts each copy inside its own namespace (deepest first); what fails stays and is reported by the caller. */
export function unmountForeign(mounts: ForeignMount[]): void {
  for (const m of [...mounts].sort((a, b) => b.mountPoint.length - a.mountPoint.length)) {
    for (const flags of [[], ['-l']])
      try {
        execFileSync('nsenter', ['-t', String(m.pid), '-m', '--', 'umount', ...flags, m.mountPoint], {
          stdio: 'ignore',
        });
        break;
      } catch {
        // gone meanwhile, or busy there: the lazy unmount next, then the caller's report
      }
  }
}

/** One line per copy, for a test's report. */
export const describeForeign = (mounts: ForeignMount[]) =>
  mounts.map((m) => `pid ${m.pid} (${m.comm}) at ${m.mountPoint}`).join('; ');
