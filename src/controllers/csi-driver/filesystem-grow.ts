/**
 * Growing a volume's filesystem to its (expanded) loop device. XFS grows mounted
 * (xfs_growfs: CAP_SYS_ADMIN). ext4 grows mounted too (resize2fs's online resize), but the
 * kernel asks for CAP_SYS_RESOURCE there, which some hosts' root lacks (this project's
 * build containers): so an ext4 that is not mounted is grown offline at NodeStage
 * (e2fsck, then resize2fs), which needs neither, and an expansion of an unstaged volume
 * always takes effect.
 */
import { runTool } from '../common/run-tool';

/** The device's size in bytes. */
export async function deviceBytes(device: string): Promise<number> {
  return Number((await runTool('blockdev', ['--getsize64', device])).trim());
}

/** An ext4's size in bytes, from its superblock. */
async function ext4Bytes(device: string): Promise<number> {
  const out = await runTool('dumpe2fs', ['-h', device]);
  const count = Number(/^Block count:\s+(\d+)/m.exec(out)?.[1]);
  const size = Number(/^Block size:\s+(\d+)/m.exec(out)?.[1]);
  if (!count || !size) throw new Error(`dumpe2fs -h ${device}: no block count or size`);
  return count * size;
}

/** Grows an unmounted ext4 to its device when the device is bigger (by a block or more). */
export async function growExt4Offline(device: string): Promise<boolean> {
  if ((await deviceBytes(device)) - (await ext4Bytes(device)) < 4096) return false;
  // resize2fs wants a freshly checked filesystem; -p repairs only what is safe unattended.
  await runTool('e2fsck', ['-f', '-p', device]);
  await runTool('resize2fs', [device]);
  return true;
}

/** Grows a mounted filesystem to its device (XFS: xfs_growfs on the mount; ext4: online resize2fs). */
export async function growMounted(fsType: string, mountPoint: string, device: string): Promise<void> {
  if (fsType === 'xfs') await runTool('xfs_growfs', [mountPoint]);
  else await runTool('resize2fs', [device]);
}
