/**
 * Hands the pod's files to QEMU's user. In a launcher pod the launcher, its libvirt and
 * QEMU are all user 107, so nothing changes hands. A launcher running as root (the local
 * pod runtime) runs its daemons, and so QEMU, as 107: what the launcher made for the
 * guest (overlays, ISOs, empty disks, the directories QEMU binds its sockets in) must
 * then belong to 107, as upstream's privileged virt-handler chowns a non-root VMI's
 * files. Symlinks are changed themselves, never followed, so a file outside the pod's
 * own directories (an image in the local store) keeps its owner; the guest's writable
 * disks outside them (claims, hostDisks) are handed over by name.
 */
import { chown, lchown, lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { VirtualMachineInstance } from '../../api';
import type { PathMap } from '../common/path-map';
import { mountedHostDiskPath } from './host-disk';
import { claimInfo } from './pvc-disk';
import { mountedDiskDir } from './volume-sources';

/** Gives `dir` and everything under it (not following links) to `uid:gid`; missing dirs are skipped. */
export async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (st.uid !== uid || st.gid !== gid) await lchown(dir, uid, gid);
  if (!st.isDirectory()) return;
  for (const name of await readdir(dir)) await chownTree(join(dir, name), uid, gid);
}

/**
 * The disk files outside the pod's own directories that QEMU writes: a filesystem
 * claim's `disk.img` and a hostDisk's file (host paths, through the pod's mounts).
 * Upstream's virt-handler gives these to 107 for a non-root VMI; a root launcher does it
 * here for its daemon's user.
 */
export function guestDiskFiles(vmi: VirtualMachineInstance, map: PathMap): string[] {
  const out: string[] = [];
  for (const v of vmi.spec.volumes ?? []) {
    if (v.persistentVolumeClaim || v.dataVolume) {
      out.push(map.toHost(`${mountedDiskDir(v.name)}/disk.img`));
      // A block claim's device node (upstream's handler chowns it for a non-root VMI).
      if (claimInfo(vmi, v.name)?.volumeMode === 'Block') out.push(map.toHost(`/dev/${v.name}`));
    } else if (v.hostDisk?.path) out.push(mountedHostDiskPath(map, v.name, v.hostDisk.path));
  }
  return out;
}

/** Gives each existing file or block device of `files` (following links to it) to `uid:gid`. */
export async function chownFiles(files: string[], uid: number, gid: number): Promise<void> {
  for (const f of files) {
    const st = await stat(f).catch(() => undefined);
    if ((st?.isFile() || st?.isBlockDevice()) && (st.uid !== uid || st.gid !== gid)) await chown(f, uid, gid);
  }
}
