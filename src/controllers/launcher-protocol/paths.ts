import { join } from 'node:path';

/**
 * Where the launcher's sockets live. The layout mirrors upstream KubeVirt: the launcher
 * serves `sockets/launcher-sock` inside a per-pod emptyDir that the node agent can reach
 * on the host at kubelet's path for that volume, so the same handler code works with a
 * real kubelet and with the local pod runtime (which uses the same layout under its own
 * root).
 */
export const LAUNCHER_SOCKET = 'launcher-sock';
/** Served first and renamed to {@link LAUNCHER_SOCKET} once the server is ready, as upstream. */
export const LAUNCHER_INIT_SOCKET = 'launcher-init-sock';
/** The guest's serial console relay, in the sockets directory. */
export const CONSOLE_SOCKET = 'virt-serial0';
/** The guest's VNC display, in the sockets directory. */
export const VNC_SOCKET = 'virt-vnc';
/** The node agent's notify pipe the launcher sends domain events to (upstream's name). */
export const NOTIFY_PIPE_SOCKET = 'domain-notify-pipe.sock';
/** The file a migration target writes its prepared domain XML to (in the sockets dir). */
export const MIGRATION_TARGET_XML = 'migration-target-domain.xml';
/** The emptyDir volume that holds the launcher's sockets. */
export const SOCKETS_VOLUME = 'sockets';
/** kubelet's root for pod directories. */
export const KUBELET_PODS_ROOT = '/var/lib/kubelet/pods';

const UID = /^[0-9a-zA-Z-]{1,64}$/;

/** The host directory of one pod's emptyDir volume (kubelet's layout). */
export function podEmptyDirPath(podsRoot: string, podUid: string, volume: string): string {
  // The uid and the volume name reach a file path: reject anything but plain tokens.
  if (!UID.test(podUid)) throw new Error(`pod uid ${JSON.stringify(podUid)} is not a plain token`);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(volume)) {
    throw new Error(`volume name ${JSON.stringify(volume)} is not a DNS-1123 label`);
  }
  return join(podsRoot, podUid, 'volumes', 'kubernetes.io~empty-dir', volume);
}

/** The launcher command socket of a pod, as the node agent sees it on the host. */
export function launcherSocketPath(podsRoot: string, podUid: string): string {
  return join(podEmptyDirPath(podsRoot, podUid, SOCKETS_VOLUME), LAUNCHER_SOCKET);
}
