/**
 * The host's mount table (/proc/self/mountinfo) and the mount(8) calls the node service
 * makes, each with an argument array (runTool: never a shell).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { runTool } from '../common/run-tool';

/** One line of mountinfo. */
export interface MountEntry {
  mountPoint: string;
  /** The path inside the mounted filesystem that is mounted (`/` for a whole filesystem). */
  root: string;
  fsType: string;
  /** The mount source (a device path for block filesystems). */
  source: string;
  options: string[];
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}

/** The current mounts, in mount order. */
export async function readMounts(): Promise<MountEntry[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const [left, right] = line.split(' - ');
    const f = left.split(' ');
    const r = (right ?? '').split(' ');
    entries.push({
      root: unescapeOctal(f[3]),
      mountPoint: unescapeOctal(f[4]),
      options: (f[5] ?? '').split(','),
      fsType: r[0] ?? '',
      source: unescapeOctal(r[1] ?? ''),
    });
  }
  return entries;
}

/** The topmost mount at exactly `path`, if any. */
export async function mountAt(path: string): Promise<MountEntry | undefined> {
  const all = await readMounts();
  for (let i = all.length - 1; i >= 0; i--) if (all[i].mountPoint === path) return all[i];
  return undefined;
}

/** `mount [-t type] [-o opts] source target`. */
export async function mount(
  source: string,
  target: string,
  opts: { type?: string; options?: string[] } = {},
) {
  const args = [
    ...(opts.type ? ['-t', opts.type] : []),
    ...(opts.options?.length ? ['-o', opts.options.join(',')] : []),
    source,
    target,
  ];
  await runTool('mount', args);
}

/** Bind-mounts `source` on `target`, read-only when asked (a bind mount takes `ro` only on a remount). */
export async function bindMount(source: string, target: string, readOnly: boolean): Promise<void> {
  await runTool('mount', ['--bind', source, target]);
  if (readOnly) await runTool('mount', ['-o', 'remount,bind,ro', target]);
}

/** Unmounts `target`. */
export async function unmount(target: string): Promise<void> {
  await runTool('umount', [target]);
}

/** The filesystem type on a block device, or undefined when it holds none (blkid -p exits 2). */
export function filesystemOf(device: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    execFile('blkid', ['-p', '-s', 'TYPE', '-o', 'value', device], (err, stdout, stderr) => {
      if (!err) resolve(String(stdout).trim() || undefined);
      else if ((err as { code?: unknown }).code === 2) resolve(undefined);
      else reject(new Error(`blkid ${device}: ${String(stderr || err.message).trim()}`));
    });
  });
}
