/**
 * The storage pool's filesystem: an XFS made with `reflink=1` in a sparse image file,
 * loop-mounted on the pool directory, so a copy of a volume's file (`cp --reflink=always`)
 * shares its blocks until either side writes: snapshots and clones are instant and take
 * no space. Where the pool directory is already a mount point (an operator's own XFS or
 * btrfs), it is used as it is, provided reflink copies work there.
 */
import { constants } from 'node:fs';
import { mkdir, open, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runTool } from '../common/run-tool';
import { mountAt, unmount } from './mounts';

/** Where the pool lives and, when it is made here, its image file. */
export interface PoolFilesystemOptions {
  /** The pool's mount point (absolute). */
  dir: string;
  /** The XFS image file to create (when absent) and loop-mount on `dir`; unused when `dir` is already a mount point. */
  image: string;
  /** The image's size in bytes when it is created (a sparse file: it takes only what is written). */
  sizeBytes: number;
}

/** Whether `dir` ends up freshly mounted by this call (so a test knows to unmount it). */
export interface PoolMountResult {
  mountedHere: boolean;
  fsType: string;
}

/** Mounts the pool (making its image first when absent) unless `dir` is already a mount point; checks reflink. */
export async function mountPoolFilesystem(o: PoolFilesystemOptions): Promise<PoolMountResult> {
  await mkdir(o.dir, { recursive: true });
  const existing = await mountAt(o.dir);
  if (existing) {
    await checkReflink(o.dir);
    return { mountedHere: false, fsType: existing.fsType };
  }
  if (!(await exists(o.image))) await makeImage(o.image, o.sizeBytes);
  // -o loop: mount binds a loop device with autoclear, so the unmount frees it.
  await runTool('mount', ['-t', 'xfs', '-o', 'loop', o.image, o.dir]);
  try {
    await checkReflink(o.dir);
  } catch (err) {
    await unmount(o.dir).catch(() => {});
    throw err;
  }
  return { mountedHere: true, fsType: 'xfs' };
}

/** Unmounts the pool directory (its loop device goes with it: autoclear). */
export async function unmountPoolFilesystem(dir: string): Promise<void> {
  if (await mountAt(dir)) await unmount(dir);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** A sparse file of `sizeBytes` formatted as XFS with reflink; made under a temporary name, renamed when done. */
async function makeImage(image: string, sizeBytes: number): Promise<void> {
  await mkdir(dirname(image), { recursive: true });
  const tmp = `${image}.making`;
  await rm(tmp, { force: true });
  const fh = await open(tmp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
  try {
    await fh.truncate(sizeBytes);
  } finally {
    await fh.close();
  }
  try {
    await runTool('mkfs.xfs', ['-q', '-m', 'reflink=1', tmp]);
    await runTool('mv', ['--no-clobber', tmp, image]);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Fails unless a reflink copy works in `dir`: without it snapshots would be full copies. */
async function checkReflink(dir: string): Promise<void> {
  const a = join(dir, '.reflink-probe');
  const b = join(dir, '.reflink-probe.copy');
  await writeFile(a, 'probe');
  try {
    await runTool('cp', ['--reflink=always', a, b]);
  } catch (err) {
    throw new Error(
      `the storage pool ${dir} does not support reflink copies (XFS with reflink=1 or btrfs): ${err}`,
    );
  } finally {
    await rm(a, { force: true });
    await rm(b, { force: true });
  }
}
