/**
 * Short names for deep socket directories. A unix socket path may hold at most 107
 * bytes, and kubelet's pod layout (`<root>/<pod uid>/volumes/kubernetes.io~empty-dir/
 * sockets/...`) easily exceeds that. Binding or connecting through a symlink to the
 * directory works, so every side (launcher, QEMU, node agent) reaches the same socket
 * through the same short link, named by a hash of the real directory.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Longest unix socket path (sun_path minus its NUL). */
export const SOCKET_PATH_MAX = 107;

/** Where the links live: short, world-traversable (QEMU's account follows them). */
export function socketLinkRoot(): string {
  return process.env.KUBEVIRT_TS_SOCKET_LINKS || join(tmpdir(), 'kvts-s');
}

/**
 * `dir` itself when sockets of up to `nameBudget` bytes fit under it, else a symlink to
 * it in {@link socketLinkRoot} (created if needed; the same for every caller), named by
 * the first `hashChars` hex digits of the directory's sha256.
 */
export function shortDir(dir: string, nameBudget = 64, hashChars = 16): string {
  if (dir.length + 1 + nameBudget <= SOCKET_PATH_MAX) return dir;
  const root = socketLinkRoot();
  const link = join(root, createHash('sha256').update(dir).digest('hex').slice(0, hashChars));
  mkdirSync(root, { recursive: true, mode: 0o755 });
  chmodSync(root, 0o1777);
  try {
    if (readlinkSync(link) === dir) return link;
    rmSync(link, { force: true });
  } catch {
    // No link yet.
  }
  try {
    symlinkSync(dir, link);
  } catch (e) {
    // Another process made the same link meanwhile.
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || readlinkSync(link) !== dir) throw e;
  }
  return link;
}

/** Removes the link {@link shortDir} made for `dir` (with the same `hashChars`), if any. */
export function removeShortDir(dir: string, hashChars = 16): void {
  const link = join(socketLinkRoot(), createHash('sha256').update(dir).digest('hex').slice(0, hashChars));
  try {
    if (readlinkSync(link) === dir) rmSync(link, { force: true });
  } catch {
    // Nothing to remove.
  }
}
