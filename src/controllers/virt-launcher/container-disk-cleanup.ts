/**
 * At the launcher's exit, the containerDisk copies the pod's volume containers made
 * (`<containerDiskDir>/disk_<i>.img`, or the `.error` file of a failed copy) are
 * removed: each volume container waits for its file to go and then exits
 * (virt-controller/services/container-disk-containers.ts), so the pod completes once its
 * launcher is done, as upstream's does (its volume containers end when the launcher
 * removed their sockets). Only regular files are removed: local mode's backing files are
 * symlinks into the image store, with no container waiting on them.
 */
import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

const COPY = /^disk_\d+\.img(\.error)?$/;

/** Removes the copies in `dir`; returns the names removed (a missing dir: none). */
export async function removeContainerDiskCopies(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const removed: string[] = [];
  for (const n of names) {
    if (!COPY.test(n)) continue;
    const st = await lstat(join(dir, n)).catch(() => undefined);
    if (!st?.isFile()) continue;
    await rm(join(dir, n), { force: true });
    removed.push(n);
  }
  return removed;
}
