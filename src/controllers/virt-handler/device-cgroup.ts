/**
 * A launcher's devices cgroup (upstream's virt-handler cgroup manager, cgroup v1 only): a
 * block device the handler puts into a running launcher pod is useless until the compute
 * container's devices controller lets its processes open it, and the runtime only allowed
 * the devices the pod had at start. The handler finds the container's cgroup from the
 * launcher process's `/proc/<pid>/cgroup` and writes `b MAJ:MIN rwm` to its
 * `devices.allow` (and `devices.deny` when the device goes), under the host's cgroup
 * mount: `/proc/1/root/sys/fs/cgroup` with hostPID, as upstream reaches it, because the
 * handler's own `/sys/fs/cgroup` shows only its own container's cgroups. On cgroup v2 the
 * devices controller is an eBPF program the runtime attached; rewriting it is not built,
 * so that case is refused ({@link CgroupV2Error}).
 */
import { appendFile, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** A block device's numbers. */
export interface DeviceNumbers {
  major: number;
  minor: number;
}

/** Where a process's devices cgroup is: v1 with its path, or v2 (the unified hierarchy). */
export type DevicesCgroup = { version: 1; path: string } | { version: 2; path: string };

/** The host has no cgroup v1 devices controller for the process: block hotplug is refused. */
export class CgroupV2Error extends Error {}

/** A cgroup path as the kernel writes it: absolute, plain components, no `..`. */
const CGROUP_PATH = /^\/([A-Za-z0-9_.:@=+-]+(\/[A-Za-z0-9_.:@=+-]+)*)?$/;

/**
 * The devices cgroup of a process from the text of its `/proc/<pid>/cgroup`: the v1 line
 * whose controllers include `devices` (`5:devices:/kubepods/...`), else the v2 line
 * (`0::/...`); undefined when neither is there. Paths with `..` or odd characters are refused.
 */
export function parseDevicesCgroup(text: string): DevicesCgroup | undefined {
  let v2: string | undefined;
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1);
    if (!CGROUP_PATH.test(path) || path.split('/').includes('..'))
      throw new Error(`cgroup line ${JSON.stringify(line)}: not a plain absolute cgroup path`);
    if (controllers.split(',').includes('devices')) return { version: 1, path };
    if (controllers === '' && line.slice(0, first) === '0') v2 = path;
  }
  return v2 === undefined ? undefined : { version: 2, path: v2 };
}

/** The rule line the v1 devices controller takes for block device `d`, read, write and mknod. */
export function blockDeviceRule(d: DeviceNumbers): string {
  if (!Number.isInteger(d.major) || !Number.isInteger(d.minor) || d.major < 0 || d.minor < 0)
    throw new Error(`device ${d.major}:${d.minor}: not a device number`);
  return `b ${d.major}:${d.minor} rwm`;
}

/**
 * A Linux `dev_t` (as `lstat(..., {bigint: true}).rdev` gives it) split into major and
 * minor, with glibc's encoding (12 bits of major above 8 bits of minor, the rest higher).
 */
export function splitDev(rdev: bigint): DeviceNumbers {
  const major = ((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn);
  const minor = (rdev & 0xffn) | ((rdev >> 12n) & ~0xffn);
  return { major: Number(major), minor: Number(minor) };
}

export interface DeviceCgroupOptions {
  /** Where the launcher's process is (`/proc` with hostPID). */
  procRoot?: string;
  /** The host's cgroup mount (default `/proc/1/root/sys/fs/cgroup`). */
  cgroupRoot?: string;
}

/** Allows and denies block devices in a launcher container's v1 devices cgroup. */
export class DeviceCgroup {
  constructor(private readonly o: DeviceCgroupOptions = {}) {}

  /** The directory of process `pid`'s devices cgroup; throws CgroupV2Error on a v2 host. */
  async dir(pid: number): Promise<string> {
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`pid ${pid}: not a process id`);
    const file = join(this.o.procRoot ?? '/proc', String(pid), 'cgroup');
    const cg = parseDevicesCgroup(await readFile(file, 'utf8'));
    if (!cg) throw new Error(`${file}: no devices cgroup line`);
    if (cg.version === 2)
      throw new CgroupV2Error(
        `process ${pid} is in the unified (v2) cgroup hierarchy: its devices are an eBPF filter, which virt-handler does not rewrite`,
      );
    return join(this.o.cgroupRoot ?? '/proc/1/root/sys/fs/cgroup', 'devices', cg.path);
  }

  /** Lets process `pid`'s container open block device `d`. */
  allow(pid: number, d: DeviceNumbers): Promise<void> {
    return this.write(pid, 'devices.allow', d);
  }

  /** Takes block device `d` away from process `pid`'s container again. */
  deny(pid: number, d: DeviceNumbers): Promise<void> {
    return this.write(pid, 'devices.deny', d);
  }

  private async write(pid: number, name: string, d: DeviceNumbers): Promise<void> {
    const file = join(await this.dir(pid), name);
    // The controller's file must be there: appending would otherwise create a stray file.
    await stat(file).catch((e: NodeJS.ErrnoException) => {
      throw new Error(
        `cgroup v1 devices controller file ${file}: ${e.code} (is --cgroup-root the host's cgroup mount?)`,
      );
    });
    // Each write is one rule for the kernel; appending keeps the test's plain files readable.
    await appendFile(file, `${blockDeviceRule(d)}\n`);
  }
}
