/**
 * Where a hotplugged volume's disk is on the node and how it reaches the launcher pod
 * (upstream's virt-handler hotplug-disk mount manager): the attachment pod's volume
 * directory under the kubelet's pods directory holds the claim (`disk.img` on a
 * filesystem claim; the CSI plugin's is under `mount/`), and the handler bind-mounts that
 * file onto `<volume>.img` in the launcher pod's `hotplug-disks` emptyDir, which the
 * launcher mounts with HostToContainer propagation. The handler's own view of the pods
 * directory is Bidirectional, so its mount reaches the host and from there the pod.
 */
import { chown, mkdir, open, readdir, readFile, rm, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { PersistentVolumeClaimInfo } from '../../api/generated/types';
import { pvcDiskSize } from '../common/pvc-disk-size';
import { runTool } from '../common/run-tool';
import { podEmptyDirPath } from '../launcher-protocol/paths';

/** The launcher pod's emptyDir for hotplugged disks (pod-volumes.ts names it). */
export const HOTPLUG_DISKS_VOLUME = 'hotplug-disks';
/** QEMU's user in the launcher (upstream's 107). */
const QEMU_UID = 107;

export interface HotplugMountsOptions {
  /** The kubelet's pods directory as this handler sees it (the host's path). */
  podsRoot: string;
  /** Runs mount/umount (tests stub it). */
  run?: (cmd: string, args: string[]) => Promise<unknown>;
  /** The mount table to look in (default /proc/self/mountinfo). */
  mountinfo?: string;
}

export class HotplugMounts {
  constructor(private readonly o: HotplugMountsOptions) {}

  private run(cmd: string, args: string[]): Promise<unknown> {
    return (this.o.run ?? runTool)(cmd, args);
  }

  /** The launcher-side file volume `name`'s disk is mounted on. */
  target(launcherPodUid: string, name: string): string {
    // The volume name reaches a path: a DNS-1123 label only (as admission requires).
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
      throw new Error(`volume name ${JSON.stringify(name)} is not a DNS-1123 label`);
    return join(podEmptyDirPath(this.o.podsRoot, launcherPodUid, HOTPLUG_DISKS_VOLUME), `${name}.img`);
  }

  /**
   * The directory holding the claim in attachment pod `podUid` (its only volume: the pod
   * mounts nothing else), or undefined while the kubelet has not mounted it yet.
   */
  async claimDir(podUid: string): Promise<string | undefined> {
    if (!/^[A-Za-z0-9-]+$/.test(podUid))
      throw new Error(`attachment pod uid ${JSON.stringify(podUid)} is not a plain token`);
    const volumes = join(this.o.podsRoot, podUid, 'volumes');
    for (const plugin of await readdir(volumes).catch(() => [] as string[])) {
      for (const vol of await readdir(join(volumes, plugin)).catch(() => [] as string[])) {
        const dir = join(volumes, plugin, vol);
        // CSI publishes under <pv>/mount; in-tree plugins (local, hostPath PVs) at <pv>.
        const csi = join(dir, 'mount');
        if (await this.isMountPoint(csi)) return csi;
        if (await this.isMountPoint(dir)) return dir;
      }
    }
    return undefined;
  }

  /** Whether `path` is a mount point (the kubelet mounted the claim there). */
  private async isMountPoint(path: string): Promise<boolean> {
    const table = await readFile(this.o.mountinfo ?? '/proc/self/mountinfo', 'utf8').catch(() => '');
    return table.split('\n').some((l) => unescapeMount(l.split(' ')[4] ?? '') === path);
  }

  /**
   * The claim's disk image in `dir`: `disk.img`, created sparse (owned by QEMU's user) at the
   * claim's size when the claim holds none yet, as the launcher does for a PVC disk at start.
   */
  async diskImage(dir: string, info: PersistentVolumeClaimInfo | undefined, field: string): Promise<string> {
    const img = join(dir, 'disk.img');
    if (
      await stat(img).then(
        () => true,
        () => false,
      )
    )
      return img;
    if (!info) throw new Error(`${field}: no claim info to size a new disk.img in ${dir}`);
    const size = pvcDiskSize(info, field);
    const fh = await open(img, 'wx', 0o660);
    try {
      await fh.truncate(Number(size));
    } finally {
      await fh.close();
    }
    await chown(img, QEMU_UID, QEMU_UID);
    return img;
  }

  /** Bind-mounts `source` onto volume `name`'s file in the launcher pod (idempotent). */
  async mount(source: string, launcherPodUid: string, name: string): Promise<void> {
    const target = this.target(launcherPodUid, name);
    if (await this.isMountPoint(target)) return;
    const fh = await open(target, 'a', 0o660);
    await fh.close();
    await this.run('mount', ['--bind', source, target]);
  }

  /** Unmounts volume `name`'s file from the launcher pod and removes it (idempotent). */
  async unmount(launcherPodUid: string, name: string): Promise<void> {
    const target = this.target(launcherPodUid, name);
    while (await this.isMountPoint(target)) await this.run('umount', [target]);
    await rm(target, { force: true });
  }

  /**
   * The launcher-side directory a memory dump volume `name` is mounted on (upstream's
   * hotplug-disk GetVolumeMountDir): the claim's whole filesystem, not a disk image.
   */
  dirTarget(launcherPodUid: string, name: string): string {
    return this.target(launcherPodUid, name).slice(0, -'.img'.length);
  }

  /**
   * Bind-mounts the claim's directory `source` onto volume `name`'s directory in the
   * launcher pod (a memory dump volume; idempotent). The directory is handed to QEMU's
   * user, which writes the dump.
   */
  async mountDir(source: string, launcherPodUid: string, name: string): Promise<void> {
    const target = this.dirTarget(launcherPodUid, name);
    if (await this.isMountPoint(target)) return;
    await mkdir(target, { recursive: true, mode: 0o750 });
    await chown(source, QEMU_UID, QEMU_UID);
    await this.run('mount', ['--bind', source, target]);
  }

  /** Unmounts volume `name`'s directory from the launcher pod and removes it (idempotent). */
  async unmountDir(launcherPodUid: string, name: string): Promise<void> {
    const target = this.dirTarget(launcherPodUid, name);
    while (await this.isMountPoint(target)) await this.run('umount', [target]);
    await rmdir(target).catch((e: NodeJS.ErrnoException) => {
      // Gone already, or something other than the mount is in it: the emptyDir goes with the pod.
      if (e.code !== 'ENOENT' && e.code !== 'ENOTEMPTY') throw e;
    });
  }

  /** Unmounts every hotplugged disk and memory dump directory of a launcher pod (its VMI is over); removes device nodes. */
  async unmountAll(launcherPodUid: string): Promise<void> {
    const dir = podEmptyDirPath(this.o.podsRoot, launcherPodUid, HOTPLUG_DISKS_VOLUME);
    for (const f of await readdir(dir, { withFileTypes: true }).catch(() => []))
      if (f.name.endsWith('.img')) await this.unmount(launcherPodUid, f.name.slice(0, -4));
      else if (f.isDirectory()) await this.unmountDir(launcherPodUid, f.name);
      // A block-mode claim's device node (./hotplug-block): its cgroup goes with the pod.
      else if (f.isBlockDevice()) await rm(join(dir, f.name), { force: true });
  }
}

/** mountinfo escapes spaces, tabs, newlines and backslashes as octal. */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}
