/**
 * Filesystem-consistent snapshots of mounted filesystem volumes: while a volume's loop
 * device has a filesystem mounted on this node, the filesystem is frozen (`fsfreeze`,
 * which first writes back everything the page cache holds) for the reflink copy and thawed
 * after. Without it a snapshot holds only what had reached the loop device: a file
 * written a moment before would be missing. Block volumes are copied as they are (a
 * guest's own caches are the VM's to flush, as KubeVirt's freeze through the guest agent
 * does).
 */
import { runTool } from '../common/run-tool';
import { loopDevicesOf } from './loop-devices';
import { readMounts } from './mounts';

/** Runs `fn` with the filesystem on `disk`'s loop device frozen, if one is mounted here. */
export async function withFrozenFilesystem<T>(disk: string, fn: () => Promise<T>): Promise<T> {
  const devices = new Set((await loopDevicesOf(disk)).map((d) => d.name));
  // Any one mount of the filesystem freezes it (bind mounts share the superblock).
  const mount = (await readMounts()).find((m) => devices.has(m.source))?.mountPoint;
  if (!mount) return fn();
  await runTool('fsfreeze', ['--freeze', mount]);
  try {
    return await fn();
  } finally {
    await runTool('fsfreeze', ['--unfreeze', mount]);
  }
}
