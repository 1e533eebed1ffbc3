/**
 * The one-node cluster's state directory and the daemons recorded in it. Everything the
 * cluster writes lives under one directory (default /var/lib/kubevirt-ts-cluster,
 * `KUBEVIRT_TS_CLUSTER_DIR` or `--state-dir`), except what the kubelet hardcodes
 * (/var/lib/kubelet/device-plugins, /var/log/containers) and the kubepods cgroups. A
 * second node (`up --nodes 2`) keeps its own state in `<root>/nodes/<name>/`, the same
 * layout (scripts/cluster/extra-node.ts).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isOurProcess, terminate } from '../../test/support/kube';

/** Default state directory. */
export const DEFAULT_STATE_DIR = '/var/lib/kubevirt-ts-cluster';

/** Where a cluster keeps each part; every path is absolute. */
export interface ClusterPaths {
  root: string;
  /** The control plane's directory (test/support/kube.ts: pki/, logs/, pids/, etcd/). */
  controlPlane: string;
  /** containerd's config, socket, root (the image store, kept across up/down) and state. */
  containerd: string;
  /** The kubelet's --root-dir. */
  kubelet: string;
  /** CNI config (net.d/), plugin links (bin/), host-local IPAM's data, Multus's cache and log. */
  cni: string;
  /** Pid files of containerd and the kubelet. */
  pids: string;
  /** Logs of containerd and the kubelet. */
  logs: string;
  /** cluster.json: what `up` started (see {@link ClusterInfo}). */
  info: string;
}

/** The layout under `root`. */
export function clusterPaths(root: string): ClusterPaths {
  return {
    root,
    controlPlane: join(root, 'control-plane'),
    containerd: join(root, 'containerd'),
    kubelet: join(root, 'kubelet'),
    cni: join(root, 'cni'),
    pids: join(root, 'pids'),
    logs: join(root, 'logs'),
    info: join(root, 'cluster.json'),
  };
}

/** What `up` records in cluster.json for `status`, `down` and tests. */
export interface ClusterInfo {
  stateDir: string;
  nodeName: string;
  nodeIP: string;
  /** https://127.0.0.1:<port> */
  server: string;
  kubeconfigPath: string;
  containerdSocket: string;
  bridge: string;
  podSubnet: string;
  /**
   * Multus wraps the pod network (scripts/cluster/multus.ts): its plugin and 00-multus.conf.
   * Absent when scripts/kube/build-multus.sh has not built the plugin.
   */
  multus?: { binary: string; config: string };
  /** Image references imported into containerd, by image name (scripts/images/build.sh). */
  images: Record<string, string>;
  /** The images.json they came from (a node added later imports the same). */
  imagesFile?: string;
  /** How many nodes share the pod subnet (each its own IPAM range); absent: one. */
  ipamNodes?: number;
  startedAt: string;
  /**
   * The nodes after the first (`up --nodes 2`), each in its own namespaces
   * (scripts/cluster/extra-node.ts); absent on a one-node cluster.
   */
  extraNodes?: ExtraNodeInfo[];
}

/** A node beside the first: what `up` records for `status`, `down` and tests. */
export interface ExtraNodeInfo {
  nodeName: string;
  /** Its address on the harness's node bridge (the kubelet's --node-ip). */
  nodeIP: string;
  /** Its own state directory (containerd, kubelet, cni, pids, logs), under the cluster's. */
  dir: string;
  containerdSocket: string;
  /** The pid of the process holding its mount and network namespaces open. */
  holderPid: number;
  /** Its cgroup root (the kubelet's cgroupRoot), in every cgroup v1 hierarchy. */
  cgroupRoot: string;
  /** Its share of the pod subnet (host-local IPAM range). */
  podRange: { start: string; end: string };
}

/** Reads cluster.json, or undefined when no cluster was brought up in `root`. */
export function readInfo(root: string): ClusterInfo | undefined {
  const file = clusterPaths(root).info;
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as ClusterInfo;
}

/** Writes cluster.json. */
export function writeInfo(info: ClusterInfo): void {
  writeFileSync(clusterPaths(info.stateDir).info, `${JSON.stringify(info, null, 2)}\n`);
}

/**
 * Starts `binary` as a daemon that outlives this process; writes `<pids>/<name>.pid`.
 * With `enter` (a node's holder pid, scripts/cluster/node-namespace.ts) it runs inside
 * that node's mount and network namespaces: nsenter execs `binary`, so the pid is its.
 */
export function startDaemon(
  paths: ClusterPaths,
  name: string,
  binary: string,
  args: string[],
  enter?: number,
): ChildProcess {
  mkdirSync(paths.pids, { recursive: true });
  mkdirSync(paths.logs, { recursive: true });
  const log = openSync(join(paths.logs, `${name}.log`), 'a');
  const [cmd, argv] =
    enter === undefined
      ? [binary, args]
      : ['nsenter', ['-t', String(enter), '-m', '-n', '--', binary, ...args]];
  const proc = spawn(cmd, argv, { stdio: ['ignore', log, log], detached: true });
  closeSync(log);
  proc.unref();
  writeFileSync(join(paths.pids, `${name}.pid`), `${proc.pid}\n`);
  return proc;
}

/** The pid of daemon `name` when it still runs `binary`. */
export function daemonPid(paths: ClusterPaths, name: string, binary: string): number | undefined {
  const file = join(paths.pids, `${name}.pid`);
  if (!existsSync(file)) return undefined;
  const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
  return isOurProcess(pid, binary) ? pid : undefined;
}

/** Stops daemon `name` (SIGTERM, SIGKILL after `graceMs`) if it runs. */
export async function stopDaemon(
  paths: ClusterPaths,
  name: string,
  binary: string,
  graceMs = 10_000,
): Promise<void> {
  const pid = daemonPid(paths, name, binary);
  if (pid) await terminate(pid, graceMs);
}

/** The last lines of a daemon's log, for error messages. */
export function logTail(paths: ClusterPaths, name: string, lines = 20): string {
  try {
    return readFileSync(join(paths.logs, `${name}.log`), 'utf8')
      .split('\n')
      .slice(-lines)
      .join('\n');
  } catch {
    return '(no log)';
  }
}

/** Runs a command, returning its stdout; throws with its stderr on failure. */
export function run(cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Polls `check` every 200 ms until it is true; throws `what` plus `why()` after `timeoutMs`. */
export async function waitFor(
  what: string,
  timeoutMs: number,
  check: () => boolean | Promise<boolean>,
  why: () => string = () => '',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    if (Date.now() > deadline) throw new Error(`${what}: not done after ${timeoutMs} ms\n${why()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
