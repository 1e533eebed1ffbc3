/**
 * A pod's directories on the host, in kubelet's layout:
 * `<root>/<pod uid>/volumes/kubernetes.io~empty-dir/<volume>`, plus the runtime's own
 * files (pid file, container log) in `<root>/<pod uid>/`.
 */
import { chmod, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { removeShortDir } from '../launcher/short-dir';
import { podEmptyDirPath, SOCKETS_VOLUME } from '../launcher-protocol/paths';
import type { Pod } from '../services/pod';

/** The runtime's files of one pod. */
export function podDir(root: string, podUid: string): string {
  // podEmptyDirPath validates the uid as a plain token.
  podEmptyDirPath(root, podUid, 'x');
  return join(root, podUid);
}

/**
 * Creates every emptyDir of `pod` (mode 0755, so QEMU's account can reach the sockets
 * it binds in the private dir; the sockets volume 0700) and returns the compute
 * container's mounts: mount path to host dir.
 */
export async function preparePodDirs(root: string, pod: Pod): Promise<Record<string, string>> {
  const uid = pod.metadata?.uid ?? '';
  await mkdir(podDir(root, uid), { recursive: true, mode: 0o755 });
  await chmod(root, 0o755).catch(() => undefined);
  const hostDirs = new Map<string, string>();
  for (const v of pod.spec?.volumes ?? []) {
    if (!v.emptyDir) continue;
    const dir = podEmptyDirPath(root, uid, v.name);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    await chmod(dir, v.name === SOCKETS_VOLUME ? 0o700 : 0o755);
    hostDirs.set(v.name, dir);
  }
  const mounts: Record<string, string> = {};
  const compute = pod.spec?.containers?.[0];
  for (const m of compute?.volumeMounts ?? []) {
    const dir = hostDirs.get(m.name);
    if (dir) mounts[m.mountPath] = dir;
  }
  return mounts;
}

/** Removes a pod's directories. */
export async function removePodDirs(root: string, podUid: string): Promise<void> {
  // The short socket links the launcher and the handler made for this pod's deep dirs.
  for (const vol of [SOCKETS_VOLUME, 'private']) {
    const dir = podEmptyDirPath(root, podUid, vol);
    removeShortDir(dir);
    removeShortDir(join(dir, 'libvirt'));
  }
  await rm(podDir(root, podUid), { recursive: true, force: true });
}
