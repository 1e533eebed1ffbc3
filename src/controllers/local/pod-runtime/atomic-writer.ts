/**
 * Kubelet's atomic writer (pkg/volume/util/atomic_writer.go) for the local pod runtime's
 * configMap, secret, downwardAPI and projected volumes: the payload goes into a
 * `..<timestamp>` directory, `..data` is swapped to it with a rename, and each top-level
 * name is a link through `..data`, so a reader in the pod never sees half an update.
 * Apart from ./pod-volumes.ts, which decides what the files are; this only puts them down.
 */
import { randomBytes } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** A file of a volume's payload: relative path, content and mode bits. */
export interface PayloadFile {
  data: Buffer;
  mode: number;
}

/** The files under `dir` (relative paths), or undefined when it cannot be read. */
async function listTree(dir: string, prefix = ''): Promise<string[] | undefined> {
  const entries = await readdir(join(dir, prefix), { withFileTypes: true }).catch(() => undefined);
  if (!entries) return undefined;
  const out: string[] = [];
  for (const e of entries) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...((await listTree(dir, rel)) ?? []));
    else out.push(rel);
  }
  return out;
}

/** Whether the payload `..data` points at already holds exactly `files` (contents and modes). */
async function samePayload(dir: string, files: Map<string, PayloadFile>): Promise<boolean> {
  const current = join(dir, '..data');
  const names = await listTree(current);
  if (!names || names.length !== files.size) return false;
  for (const [rel, f] of files) {
    const path = join(current, ...rel.split('/'));
    const st = await lstat(path).catch(() => undefined);
    if (!st?.isFile() || (st.mode & 0o7777) !== f.mode) return false;
    if (!(await readFile(path)).equals(f.data)) return false;
  }
  return true;
}

/**
 * Writes `files` into `dir` in kubelet's atomic-writer layout. Rewriting a volume (the
 * runtime's resync of a changed Secret or ConfigMap) swaps `..data` to a new payload
 * directory, removes the old one and the links of names no longer there, and does nothing
 * when the payload is unchanged.
 */
export async function writeAtomic(dir: string, files: Map<string, PayloadFile>): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  if (await samePayload(dir, files)) return;
  const previous = await readlink(join(dir, '..data')).catch(() => undefined);
  const now = new Date();
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const ts = `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.${randomBytes(5).toString('hex')}`;
  const tsDir = join(dir, ts);
  await mkdir(tsDir, { mode: 0o755 });
  await chmod(tsDir, 0o755);
  const top = new Set<string>();
  for (const [rel, f] of files) {
    const file = join(tsDir, ...rel.split('/'));
    await mkdir(dirname(file), { recursive: true, mode: 0o755 });
    await writeFile(file, f.data, { mode: f.mode });
    // writeFile's mode is filtered by the umask; kubelet sets the bits exactly.
    await chmod(file, f.mode);
    top.add(rel.split('/')[0]);
  }
  const tmpLink = join(dir, '..data_tmp');
  await rm(tmpLink, { force: true });
  await symlink(ts, tmpLink);
  await rename(tmpLink, join(dir, '..data'));
  for (const name of top) {
    const link = join(dir, name);
    const st = await lstat(link).catch(() => undefined);
    if (st?.isSymbolicLink()) continue;
    if (st) await rm(link, { recursive: true, force: true });
    await symlink(join('..data', name), link);
  }
  if (!previous) return;
  // As kubelet's atomic writer: the old payload and the links of names that went away.
  for (const name of await readdir(dir)) {
    if (name.startsWith('..') || top.has(name)) continue;
    if ((await lstat(join(dir, name))).isSymbolicLink()) await rm(join(dir, name), { force: true });
  }
  if (previous.startsWith('..') && previous !== ts)
    await rm(join(dir, previous), { recursive: true, force: true });
}
