/**
 * Reading back what a guest wrote to a Filesystem claim: the pool volume's file (an
 * image of the claim's filesystem, once nothing has it staged) mounted read-only, and the
 * first line of its `disk.img` at an offset.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTool } from '../../src/controllers/common/run-tool';

/** The first line of the 64 bytes at `offset` of `disk.img` in the filesystem image `volumeFile`. */
export async function diskImageLine(volumeFile: string, offset: number): Promise<string> {
  const mnt = mkdtempSync(join(tmpdir(), 'kvts-vol-'));
  await runTool('mount', ['-o', 'loop,ro', volumeFile, mnt]);
  const buf = Buffer.alloc(64);
  try {
    const fd = openSync(join(mnt, 'disk.img'), 'r');
    readSync(fd, buf, 0, buf.length, offset);
    closeSync(fd);
  } finally {
    await runTool('umount', [mnt]);
    rmSync(mnt, { recursive: true, force: true });
  }
  return buf.toString('utf8').split('\n')[0] ?? '';
}
