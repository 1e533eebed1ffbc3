/**
 * Device ownership in a launcher's container (upstream's claimDeviceOwnership): the
 * kubelet creates the device nodes a device plugin allocates (`/dev/kvm`) with the host
 * node's owner and mode (root:kvm 0660), which the non-root launcher (107) cannot open.
 * The handler, privileged, makes the container's own node 107's, as upstream does; the
 * host's node is never touched.
 */
import { constants } from 'node:fs';
import { lstat, open, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Upstream's qemu user and group, which non-root launchers run as. */
export const QEMU_OWNER = { uid: 107, gid: 107 } as const;

/**
 * Makes `<root>/dev/<device>` (a launcher container's node, `root` = `/proc/<pid>/root`)
 * owned by `owner`. Returns false when the container has no such node. Refuses anything
 * but a character device of the same device number as the host's `/dev/<device>` and a
 * node that is the host's own (a container's /dev is its own tmpfs); `dev` and the node
 * are never followed as symlinks, which could lead out of the container.
 */
export async function claimDeviceOwnership(
  root: string,
  device: string,
  owner: { uid: number; gid: number } = QEMU_OWNER,
  hostDev = '/dev',
): Promise<boolean> {
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(device))
    throw new Error(`device ${JSON.stringify(device)}: not a device name`);
  const dir = join(root, 'dev');
  const d = await lstat(dir).catch(() => undefined);
  if (!d) return false;
  if (!d.isDirectory()) throw new Error(`${dir}: not a directory`);
  const path = join(dir, device);
  const host = await stat(join(hostDev, device)).catch(() => undefined);
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    // O_NONBLOCK: opening a device must not wait on it.
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new Error(`${path}: ${(err as Error).message}`);
  }
  try {
    const s = await fh.stat();
    if (!s.isCharacterDevice()) throw new Error(`${path}: not a character device`);
    if (!host || s.rdev !== host.rdev)
      throw new Error(`${path}: device ${s.rdev} is not the host's ${join(hostDev, device)}`);
    if (s.dev === host.dev && s.ino === host.ino)
      throw new Error(`${path}: is the host's own ${join(hostDev, device)}, not the container's`);
    if (s.uid !== owner.uid || s.gid !== owner.gid) await fh.chown(owner.uid, owner.gid);
    return true;
  } finally {
    await fh.close();
  }
}
