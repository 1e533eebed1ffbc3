/**
 * A pod's directories on the host, in kubelet's layout:
 * `<root>/<pod uid>/volumes/kubernetes.io~<plugin>/<volume>`, plus the runtime's own
 * files (pid file, container log) in `<root>/<pod uid>/`.
 */
import { chmod, lstat, mkdir, readFile, rm, symlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Pod } from '../../common/pod';
import { podEmptyDirPath, SOCKETS_VOLUME } from '../../launcher-protocol/paths';
import { removeShortDir } from '../../launcher-protocol/short-dir';
import type { ObjectClient } from '../../runtime/types';
import type { PodCsiVolumes } from './pod-runtime-options';
import { hostPathProblem, materializeVolume, payloadPathProblem, quoted } from './pod-volumes';

/** The runtime's files of one pod. */
export function podDir(root: string, podUid: string): string {
  // podEmptyDirPath validates the uid as a plain token.
  podEmptyDirPath(root, podUid, 'x');
  return join(root, podUid);
}

/**
 * Creates every emptyDir of `pod` (mode 0755, so QEMU's account can reach the sockets
 * it binds in the private dir; the sockets volume 0700), materializes its other volumes
 * (configMap, secret, downwardAPI, projected, hostPath, PVC: see pod-volumes.ts; `client`
 * reads their sources) and returns the compute container's mounts: mount path to host
 * path (a `subPath` mount maps to the path inside its volume). A mount nested in an
 * emptyDir mount also gets a link at that place inside the emptyDir, so a path computed
 * from the outer mount (the launcher's `<private>/vmi-disks/<volume>/disk.img`) reaches
 * the volume as it would in a mount namespace.
 */
export async function preparePodDirs(
  root: string,
  pod: Pod,
  client?: ObjectClient,
  csi?: PodCsiVolumes,
): Promise<Record<string, string>> {
  const uid = pod.metadata?.uid ?? '';
  const dir = podDir(root, uid);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(root, 0o755).catch(() => undefined);
  const hostDirs = new Map<string, string>();
  const emptyDirs = new Set<string>();
  const subject = `Pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
  for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
    if (v.emptyDir) {
      const d = podEmptyDirPath(root, uid, v.name);
      await mkdir(d, { recursive: true, mode: 0o755 });
      await chmod(d, v.name === SOCKETS_VOLUME ? 0o700 : 0o755);
      hostDirs.set(v.name, d);
      emptyDirs.add(v.name);
      continue;
    }
    try {
      const m = await materializeVolume(client, dir, pod, v, i, csi);
      if (m) hostDirs.set(v.name, m.hostPath);
    } catch (e) {
      throw new Error(`${subject}: ${(e as Error).message}`, { cause: e });
    }
  }
  const mounts: Record<string, string> = {};
  const compute = pod.spec?.containers?.[0];
  const volumeMounts = compute?.volumeMounts ?? [];
  for (const [j, m] of volumeMounts.entries()) {
    const host = hostDirs.get(m.name);
    if (!host) continue;
    const field = `spec.containers[0].volumeMounts[${j}]`;
    if (hostPathProblem(m.mountPath))
      throw new Error(
        `${subject}: ${field}.mountPath: ${quoted(m.mountPath)} ${hostPathProblem(m.mountPath)}`,
      );
    if (m.subPath) {
      const problem = payloadPathProblem(m.subPath);
      if (problem) throw new Error(`${subject}: ${field}.subPath: ${quoted(m.subPath)} ${problem}`);
      mounts[m.mountPath] = join(host, m.subPath);
    } else mounts[m.mountPath] = host;
  }
  // Block claims: the device path maps to a link named as the device, in one directory
  // (`volumeDevices/`, the launcher's block-device directory), to where the CSI plugin
  // bound the device node.
  for (const [j, d] of (compute?.volumeDevices ?? []).entries()) {
    const host = hostDirs.get(d.name);
    if (!host) continue;
    const field = `spec.containers[0].volumeDevices[${j}].devicePath`;
    const problem = hostPathProblem(d.devicePath) ?? (basename(d.devicePath) ? undefined : 'names no file');
    if (problem) throw new Error(`${subject}: ${field}: ${quoted(d.devicePath)} ${problem}`);
    const link = join(dir, VOLUME_DEVICES_DIR, basename(d.devicePath));
    await mkdir(dirname(link), { recursive: true, mode: 0o755 });
    await rm(link, { force: true });
    await symlink(host, link);
    mounts[d.devicePath] = link;
  }
  // The termination message file (kubelet's terminationMessagePath) is the pod directory's.
  mounts[compute?.terminationMessagePath || DEFAULT_TERMINATION_PATH] = join(dir, TERMINATION_FILE);
  // Links for mounts nested in an emptyDir mount (deepest parent wins).
  for (const m of volumeMounts) {
    if (emptyDirs.has(m.name) || !mounts[m.mountPath]) continue;
    const parent = volumeMounts
      .filter((p) => emptyDirs.has(p.name) && m.mountPath.startsWith(`${p.mountPath.replace(/\/$/, '')}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    if (!parent) continue;
    const link = join(
      mounts[parent.mountPath],
      m.mountPath.slice(parent.mountPath.replace(/\/$/, '').length + 1),
    );
    if (await lstat(link).catch(() => undefined)) continue;
    await mkdir(dirname(link), { recursive: true, mode: 0o755 });
    await symlink(mounts[m.mountPath], link);
  }
  return mounts;
}

/** The pod directory's directory of links to its block devices (see preparePodDirs). */
export const VOLUME_DEVICES_DIR = 'volumeDevices';

/** The kubelet's default terminationMessagePath. */
const DEFAULT_TERMINATION_PATH = '/dev/termination-log';
const TERMINATION_FILE = 'termination-log';

/** A pod's termination message (at most the kubelet's 4096 bytes), or '' when it wrote none. */
export async function terminationMessage(dir: string): Promise<string> {
  const text = await readFile(join(dir, TERMINATION_FILE), 'utf8').catch(() => '');
  return text.slice(0, 4096).trim();
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
