/**
 * A node beside the first on the same machine is a mount namespace plus a network
 * namespace (as kind's nodes are containers), held open by a holder process; the node's
 * containerd and kubelet run inside both (`nsenter -t <holder> -m -n`, not `ip netns
 * exec`, which mounts a fresh /sys and hides the cgroup mounts runc and the kubelet need).
 * Inside, per-node directories are bound over the paths the kubelet and containerd fix
 * (the device-plugin socket's directory, /var/log/containers, the CNI cache), and the
 * node gets its own cgroup root in every hierarchy. See docs/cluster.md, "Two nodes".
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { terminate } from '../../test/support/kube';
import { run, waitFor } from './state';

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * Host paths each node gets its own copy of, bound over them in its mount namespace: the
 * kubelet's fixed device-plugin directory and container-log links, containerd 1.6's CNI
 * result cache, and virt-handler's host directories (node agents must not see each
 * other's sockets).
 */
export const PER_NODE_PATHS = [
  '/var/lib/kubelet/device-plugins',
  '/var/log/containers',
  '/var/lib/cni',
  '/run/kubevirt',
];

/** argv[0] of a node's holder process: names the node's directory, for leftover checks. */
export const holderName = (nodeDir: string): string => `kvts-node-holder:${nodeDir}`;

/** The inode of a process's namespace (`/proc/<pid>/ns/<kind>`), or undefined when it is gone. */
export function namespaceOf(pid: number | 'self', kind: 'mnt' | 'net'): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/${kind}`);
  } catch {
    return undefined;
  }
}

/**
 * Starts the holder (`unshare --mount --net`, propagation private, then a sleep named
 * {@link holderName}) and waits until it sits in its new namespaces; returns its pid.
 */
export async function startHolder(nodeDir: string): Promise<number> {
  const proc = spawn(
    'unshare',
    [
      '--mount',
      '--net',
      '--propagation',
      'private',
      '--',
      'bash',
      '-c',
      'exec -a "$0" sleep infinity',
      holderName(nodeDir),
    ],
    { stdio: 'ignore', detached: true },
  );
  proc.unref();
  const pid = proc.pid;
  if (!pid) throw new Error('node namespace: unshare did not start');
  const hostNet = namespaceOf('self', 'net');
  await waitFor('node namespace holder', 10_000, () => {
    if (proc.exitCode !== null) throw new Error(`node namespace: unshare exited ${proc.exitCode}`);
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
    return argv0 === holderName(nodeDir) && namespaceOf(pid, 'net') !== hostNet;
  });
  return pid;
}

/** Runs a shell script inside the node's mount and network namespaces; returns stdout. */
export function inNode(holder: number, script: string, ...args: string[]): string {
  return run('nsenter', ['-t', String(holder), '-m', '-n', '--', 'sh', '-euc', script, 'sh', ...args]);
}

/** Mount points at or under `dir` in process `pid`'s mount namespace, deepest first. */
function mountsOf(pid: number, dir: string): string[] {
  const prefix = `${dir}/`;
  return readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) =>
      l.split(' ')[4].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8))),
    )
    .filter((m) => m === dir || m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/**
 * Prepares the node's mount namespace: drops the copies of the cluster's other mounts
 * (node 1's pod volumes and netns files would otherwise be held alive here), makes `/`
 * rshared (Bidirectional hostPath volumes need it; only here, the host's `/` stays
 * private), binds `<nodeDir>/host/<path>` over each of {@link PER_NODE_PATHS} and each of
 * `binds` ([own directory, path it appears at]), and brings the loopback up. Returns the
 * host directories it had to create as mount points (`down` removes them when empty).
 */
export function prepareNodeMounts(
  holder: number,
  stateDir: string,
  nodeDir: string,
  binds: [string, string][] = [],
): string[] {
  const foreign = mountsOf(holder, stateDir);
  if (foreign.length) inNode(holder, 'for m in "$@"; do umount -l "$m" || true; done', ...foreign);
  const pairs: string[] = binds.flatMap(([own, at]) => {
    mkdirSync(own, { recursive: true });
    mkdirSync(at, { recursive: true });
    return [own, at];
  });
  const created: string[] = [];
  for (const path of PER_NODE_PATHS) {
    const own = join(nodeDir, 'host', path);
    mkdirSync(own, { recursive: true });
    // The mount point must exist on the host (usually the first node made it already).
    const first = mkdirSync(path, { recursive: true });
    if (first) created.push(first);
    pairs.push(own, path);
  }
  inNode(
    holder,
    `mount --make-rshared /
while [ $# -gt 0 ]; do mount --bind "$1" "$2"; shift 2; done
ip link set lo up`,
    ...pairs,
  );
  return created;
}

/** Removes mount-point directories {@link prepareNodeMounts} created, each only if empty. */
export function removeMountPoints(dirs: string[]): void {
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
    try {
      rmdirSync(d);
    } catch {
      // In use by the first node meanwhile, or gone: left as it is.
    }
  }
}

/** The cgroup v1 hierarchies (and the hybrid layout's unified one): mounted directories only. */
function hierarchies(): string[] {
  if (!existsSync(CGROUP_ROOT)) return [];
  return readdirSync(CGROUP_ROOT)
    .map((h) => join(CGROUP_ROOT, h))
    .filter((d) => statSync(d).isDirectory() && existsSync(join(d, 'cgroup.procs')));
}

/**
 * Creates the node's cgroup root (`/<name>`) in every hierarchy, with cpuset's cpus and
 * mems copied from the parent (an empty cpuset admits no task); returns the kubelet's
 * cgroupRoot.
 */
export function createCgroupRoot(name: string): string {
  for (const h of hierarchies()) {
    const d = join(h, name);
    mkdirSync(d, { recursive: true });
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      if (existsSync(join(h, file))) writeFileSync(join(d, file), readFileSync(join(h, file)));
    }
  }
  return `/${name}`;
}

/** The node's cgroup root directories that exist. */
export function cgroupRootDirs(name: string): string[] {
  return hierarchies()
    .map((h) => join(h, name))
    .filter((d) => existsSync(d));
}

function removeCgroupTree(dir: string): void {
  for (const entry of readdirSync(dir)) {
    const child = join(dir, entry);
    if (statSync(child).isDirectory()) removeCgroupTree(child);
  }
  rmdirSync(dir);
}

/** Removes the node's cgroup root everywhere; returns those that could not be (still in use). */
export function removeCgroupRoot(name: string): string[] {
  const stuck: string[] = [];
  for (const d of cgroupRootDirs(name)) {
    try {
      removeCgroupTree(d);
    } catch (err) {
      stuck.push(`cgroup ${d}: ${(err as Error).message}`);
    }
  }
  return stuck;
}

/**
 * Processes of the node: the holder, those in its namespaces (`nsIds`, as recorded at
 * start), and those whose arguments name its directory (its daemons and their shims).
 */
export function nodeProcesses(nodeDir: string, nsIds: string[] = []): { pid: number; argv: string[] }[] {
  const out: { pid: number; argv: string[] }[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    if (pid === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.length === 0) continue; // a kernel thread or a zombie
      const inNs =
        nsIds.length > 0 &&
        [namespaceOf(pid, 'mnt'), namespaceOf(pid, 'net')].some((n) => n && nsIds.includes(n));
      if (inNs || argv.some((a) => a.includes(nodeDir))) out.push({ pid, argv });
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** Ends every process of the node (SIGTERM, then SIGKILL); the namespaces go with the last. */
export async function killNodeProcesses(nodeDir: string, nsIds: string[]): Promise<number> {
  const procs = nodeProcesses(nodeDir, nsIds);
  await Promise.all(procs.map((p) => terminate(p.pid, 3_000)));
  return procs.length;
}
