/**
 * The local-mode state directory: everything `kubevirt-ts up` keeps between runs (the
 * embedded store's journal, pod directories, the image store, the sockets the CLI talks
 * to). QEMU runs as its own account under qemu:///system and must traverse it to reach
 * kernels and disks, so it is created world-traversable (0755) but its sockets are 0600.
 */
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** Env var overriding the state directory. */
export const STATE_DIR_ENV = 'KUBEVIRT_TS_STATE_DIR';

/** The files and directories of one state directory. */
export interface StatePaths {
  root: string;
  /** The embedded store's journal and snapshots. */
  store: string;
  /** The embedded store served over HTTP (Kubernetes REST paths). */
  storeSocket: string;
  /** The local subresource API (pause, unpause, soft-reboot, guest info, console path). */
  apiSocket: string;
  /** kubelet-style pod directories of the local pod runtime. */
  pods: string;
  /** The local image store. */
  images: string;
  /** virt-handler's own sockets. */
  handler: string;
  /** Pid of the running `up` (background or foreground). */
  pidFile: string;
  /** Log of a background `up`. */
  logFile: string;
  /** Where the running `up` serves each component's /metrics (JSON: component -> URL). */
  metricsFile: string;
  /** The CSI driver's pool (an XFS image and its mount point) and staging mounts. */
  csi: string;
  /** Local mode's CA and the upload proxy's pairs (local-pki.ts). */
  pki: string;
}

/** The default state directory: $KUBEVIRT_TS_STATE_DIR, /var/lib/kubevirt-ts for root, else ~/.local/state/kubevirt-ts. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env[STATE_DIR_ENV]) return resolve(env[STATE_DIR_ENV]);
  if (process.getuid?.() === 0) return '/var/lib/kubevirt-ts';
  return join(homedir(), '.local', 'state', 'kubevirt-ts');
}

/** The paths under `root` (nothing is created). */
export function statePaths(root: string = defaultStateDir()): StatePaths {
  const r = resolve(root);
  return {
    root: r,
    store: join(r, 'store'),
    storeSocket: join(r, 'store.sock'),
    apiSocket: join(r, 'api.sock'),
    pods: join(r, 'pods'),
    images: join(r, 'images'),
    handler: join(r, 'handler'),
    pidFile: join(r, 'up.pid'),
    logFile: join(r, 'up.log'),
    metricsFile: join(r, 'metrics.json'),
    csi: join(r, 'csi'),
    pki: join(r, 'pki'),
  };
}

/** Creates the directories of `paths` (idempotent). */
export function ensureStateDirs(paths: StatePaths): void {
  mkdirSync(paths.root, { recursive: true, mode: 0o755 });
  for (const d of [paths.store, paths.handler, paths.pki]) mkdirSync(d, { recursive: true, mode: 0o700 });
  for (const d of [paths.pods, paths.images]) mkdirSync(d, { recursive: true, mode: 0o755 });
}
