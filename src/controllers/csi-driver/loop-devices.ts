/**
 * Loop devices binding a pool file to a block device. Which device holds which file is
 * read from sysfs each time (/sys/block/loopN/loop/backing_file), not remembered, so the
 * driver finds its devices again after a restart; reading sysfs opens no device, where
 * `losetup --list` may, and a device open elsewhere at that moment cannot be detached.
 *
 * A detach of a device something still holds open only marks it for removal at the last
 * close (the kernel's autoclear): the device and its file stay bound a while. So
 * {@link detachLoop} waits until the binding is gone, and fails if it does not go.
 */
import { readdir, readFile } from 'node:fs/promises';
import { runTool } from '../common/run-tool';

/** One loop device and the file behind it. */
export interface LoopDevice {
  /** `/dev/loopN`. */
  name: string;
  /** The backing file's path as the kernel reports it. */
  backFile: string;
  readOnly: boolean;
  /** Detached while held open: it goes at the last close. */
  autoclear: boolean;
}

async function sysfs(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/** Every loop device bound to a file. */
export async function listLoopDevices(): Promise<LoopDevice[]> {
  const names = (await readdir('/sys/block')).filter((n) => /^loop\d+$/.test(n));
  const out: LoopDevice[] = [];
  for (const n of names) {
    const backFile = await sysfs(`/sys/block/${n}/loop/backing_file`);
    if (!backFile) continue;
    out.push({
      name: `/dev/${n}`,
      // A deleted backing file shows as "path (deleted)".
      backFile: backFile.replace(/ \(deleted\)$/, ''),
      readOnly: (await sysfs(`/sys/block/${n}/ro`)) === '1',
      autoclear: (await sysfs(`/sys/block/${n}/loop/autoclear`)) === '1',
    });
  }
  return out;
}

/** The loop devices bound to `file` (an absolute, resolved path). */
export async function loopDevicesOf(file: string): Promise<LoopDevice[]> {
  return (await listLoopDevices()).filter((d) => d.backFile === file);
}

/** Binds `file` to a free loop device and returns its path. */
export async function attachLoop(file: string, readOnly = false): Promise<string> {
  const args = ['--find', '--show', ...(readOnly ? ['--read-only'] : []), file];
  return (await runTool('losetup', args)).trim();
}

/** The file bound to `device`, if any. */
async function backingFile(device: string): Promise<string | undefined> {
  const n = device.replace(/^\/dev\//, '');
  const f = await sysfs(`/sys/block/${n}/loop/backing_file`);
  return f?.replace(/ \(deleted\)$/, '');
}

/**
 * Unbinds `device` from `file`, and waits (up to `timeoutMs`) until it is unbound: a
 * device something holds open is only marked for removal. A device no longer bound to
 * `file` is left alone: its number may already be another file's.
 */
export async function detachLoop(device: string, file: string, timeoutMs = 5000): Promise<void> {
  if ((await backingFile(device)) !== file) return;
  await runTool('losetup', ['--detach', device]);
  const end = Date.now() + timeoutMs;
  while ((await backingFile(device)) === file) {
    if (Date.now() > end)
      throw new Error(`loop device ${device} of ${file} is still held open after its detach`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Makes a loop device take its backing file's new size (after an expansion). */
export async function refreshLoopSize(device: string): Promise<void> {
  await runTool('losetup', ['--set-capacity', device]);
}
