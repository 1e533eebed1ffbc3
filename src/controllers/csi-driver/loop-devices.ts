/**
 * Loop devices binding a pool file to a block device (util-linux losetup). Which device
 * holds which file is asked of the kernel each time (`losetup --list`), not remembered,
 * so the driver finds its devices again after a restart.
 */
import { runTool } from '../common/run-tool';

/** One loop device and the file behind it. */
export interface LoopDevice {
  /** `/dev/loopN`. */
  name: string;
  /** The backing file's path as the kernel reports it. */
  backFile: string;
  readOnly: boolean;
}

interface LosetupJson {
  loopdevices?: { name: string; 'back-file': string | null; ro: boolean | string | number }[];
}

/** Every loop device bound to a file. */
export async function listLoopDevices(): Promise<LoopDevice[]> {
  const out = await runTool('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE,RO']);
  if (!out.trim()) return [];
  const parsed = JSON.parse(out) as LosetupJson;
  return (parsed.loopdevices ?? [])
    .filter((d) => d['back-file'])
    .map((d) => ({
      name: d.name,
      // A deleted backing file shows as "path (deleted)".
      backFile: String(d['back-file']).replace(/ \(deleted\)$/, ''),
      readOnly: d.ro === true || d.ro === '1' || d.ro === 1,
    }));
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

/** Unbinds a loop device. */
export async function detachLoop(device: string): Promise<void> {
  await runTool('losetup', ['--detach', device]);
}

/** Makes a loop device take its backing file's new size (after an expansion). */
export async function refreshLoopSize(device: string): Promise<void> {
  await runTool('losetup', ['--set-capacity', device]);
}
