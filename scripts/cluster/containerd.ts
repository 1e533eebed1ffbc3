/**
 * The cluster's own containerd: its config, root (the image store, kept across down/up
 * so images are imported once) and state under the state directory, with the CRI settings
 * these machines need (no CAP_SYS_RESOURCE: restrict_oom_score_adj, oom_score 0; cgroup v1:
 * SystemdCgroup false) and the local pause image as the sandbox image.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cniBinDir } from './multus';
import { type ClusterPaths, daemonPid, logTail, run, startDaemon, stopDaemon, waitFor } from './state';

export const CONTAINERD_BIN = '/usr/bin/containerd';
/** The containerd namespace the CRI plugin (and so the kubelet) uses. */
export const K8S_NAMESPACE = 'k8s.io';

/** containerd's socket in a cluster's state directory. */
export function containerdSocket(paths: ClusterPaths): string {
  return join(paths.containerd, 'containerd.sock');
}

/** TOML strings: our own paths and image references, quoted. */
const q = (s: string) => JSON.stringify(s);

/** Writes config.toml for containerd 1.6 (config version 2). */
export function writeContainerdConfig(paths: ClusterPaths, sandboxImage: string): string {
  const d = paths.containerd;
  mkdirSync(d, { recursive: true });
  const file = join(d, 'config.toml');
  writeFileSync(
    file,
    `version = 2
root = ${q(join(d, 'root'))}
state = ${q(join(d, 'state'))}
oom_score = 0

[grpc]
  address = ${q(containerdSocket(paths))}

[ttrpc]
  address = ${q(join(d, 'containerd.sock.ttrpc'))}

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(d, 'opt'))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(sandboxImage)}
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  # Block volumes (volumeDevices) owned by the container's runAsUser/runAsGroup, as
  # KubeVirt asks of a cluster with non-root VMs: QEMU (107) opens the claim's device.
  device_ownership_from_security_context = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ${q(join(d, 'runc'))}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(cniBinDir(paths.cni))}
    conf_dir = ${q(join(paths.cni, 'net.d'))}
    max_conf_num = 1
`,
  );
  return file;
}

/** `ctr` against this cluster's containerd, in the CRI's namespace. */
export function ctr(paths: ClusterPaths, args: string[], input?: string): string {
  return run('ctr', ['--address', containerdSocket(paths), '--namespace', K8S_NAMESPACE, ...args], input);
}

/**
 * Starts containerd (logging at `logLevel`, default warn) and waits until it answers;
 * `enter`: inside that node's namespaces (see startDaemon).
 */
export async function startContainerd(
  paths: ClusterPaths,
  sandboxImage: string,
  logLevel: 'warn' | 'info' = 'warn',
  enter?: number,
): Promise<void> {
  const config = writeContainerdConfig(paths, sandboxImage);
  if (daemonPid(paths, 'containerd', CONTAINERD_BIN))
    throw new Error('containerd already runs for this cluster');
  const proc = startDaemon(
    paths,
    'containerd',
    CONTAINERD_BIN,
    ['--config', config, '--log-level', logLevel],
    enter,
  );
  await waitFor(
    'containerd',
    30_000,
    () => {
      if (proc.exitCode !== null) throw new Error(`containerd exited: ${logTail(paths, 'containerd')}`);
      return existsSync(containerdSocket(paths)) && ctr(paths, ['version']).includes('Server');
    },
    () => logTail(paths, 'containerd'),
  );
}

/** Stops containerd (its shims, and so any container left, are killed first by `killTasks`). */
export async function stopContainerd(paths: ClusterPaths): Promise<void> {
  await stopDaemon(paths, 'containerd', CONTAINERD_BIN);
}

/** Kills and removes every task and container left in the CRI namespace; returns how many. */
export function killTasks(paths: ClusterPaths): number {
  if (!daemonPid(paths, 'containerd', CONTAINERD_BIN)) return 0;
  const ids = ctr(paths, ['containers', 'list', '--quiet']).split('\n').filter(Boolean);
  for (const id of ids) {
    try {
      ctr(paths, ['tasks', 'kill', '--signal', 'SIGKILL', id]);
    } catch {
      // No task (the container never ran or already stopped).
    }
    try {
      ctr(paths, ['tasks', 'delete', '--force', id]);
    } catch {
      // Same.
    }
    ctr(paths, ['containers', 'delete', id]);
  }
  return ids.length;
}

/** The image references present in containerd. */
export function imageRefs(paths: ClusterPaths): Set<string> {
  return new Set(ctr(paths, ['images', 'list', '--quiet']).split('\n').filter(Boolean));
}

/**
 * Imports an OCI layout (scripts/images/build.sh) unless `ref` is present already: the
 * layout is streamed as a tar into `ctr image import`, which names it after the layout's
 * io.containerd.image.name annotation and unpacks it for the CRI's snapshotter.
 */
export function importImage(paths: ClusterPaths, ref: string, layout: string, present: Set<string>): boolean {
  if (present.has(ref)) return false;
  const tar = run('sh', [
    '-c',
    'tar -C "$1" --exclude=./.done -cf - . | ctr --address "$2" --namespace "$3" images import -',
    'sh',
    layout,
    containerdSocket(paths),
    K8S_NAMESPACE,
  ]);
  if (!imageRefs(paths).has(ref))
    throw new Error(`importing ${layout}: ${ref} did not appear (${tar.trim()})`);
  return true;
}
