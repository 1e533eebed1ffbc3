/**
 * Finding a launcher pod's processes from the node (upstream's virt-handler isolation
 * detector): on a node with a kubelet the handler runs in the host's PID namespace
 * (`hostPID`) and reaches the launcher's network namespace, root filesystem and devices
 * through `/proc/<pid>/`. Upstream takes the pid from SO_PEERCRED on the launcher's
 * socket; Node has no SO_PEERCRED, so the pid is the process whose cgroup is the compute
 * container's (its container ID from the pod status): the kernel's own record, which the
 * container cannot change.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../common/pod';

/** Where a launcher's compute container lives, seen from the host. */
export interface LauncherIsolation {
  /** Host pid of the container's first process (the launcher). */
  pid: number;
  /** Its network namespace (`/proc/<pid>/ns/net`). */
  netns: string;
  /** Its root filesystem (`/proc/<pid>/root`; upstream's MountRoot). */
  root: string;
}

/** A runtime's container ID (`containerd://<id>`, `cri-o://<id>`): hex, 12-128 digits. */
const CONTAINER_ID = /^[a-z][a-z0-9-]*:\/\/([0-9a-f]{12,128})$/;

/** The ID of the pod's `compute` container, or undefined before it started. */
export function computeContainerId(pod: Pod): string | undefined {
  const id = pod.status?.containerStatuses?.find((c) => c.name === 'compute')?.containerID;
  return id ? CONTAINER_ID.exec(id)?.[1] : undefined;
}

/**
 * Whether one line of /proc/<pid>/cgroup puts the process in container `id`: the
 * cgroupfs driver names the leaf after the ID (`/kubepods/besteffort/pod<uid>/<id>`),
 * the systemd driver after the runtime and the ID (`cri-containerd-<id>.scope`).
 */
function inContainer(line: string, id: string): boolean {
  const path = line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1);
  const leaf = path.slice(path.lastIndexOf('/') + 1);
  return leaf === id || leaf.endsWith(`-${id}.scope`);
}

/**
 * The host pid of container `id`'s first process: of the processes in its cgroup, the one
 * whose parent is not in it. Undefined when no process is (not started, gone, or this
 * process is not in the host's PID namespace).
 */
export async function containerPid(id: string, procRoot = '/proc'): Promise<number | undefined> {
  const members = new Map<number, number>();
  for (const entry of await readdir(procRoot)) {
    if (!/^\d+$/.test(entry)) continue;
    let cgroup: string;
    try {
      cgroup = await readFile(join(procRoot, entry, 'cgroup'), 'utf8');
    } catch {
      continue; // exited while listing
    }
    if (!cgroup.split('\n').some((l) => l && inContainer(l, id))) continue;
    const status = await readFile(join(procRoot, entry, 'status'), 'utf8').catch(() => '');
    members.set(Number(entry), Number(/^PPid:\s+(\d+)$/m.exec(status)?.[1] ?? 0));
  }
  const roots = [...members].filter(([, ppid]) => !members.has(ppid)).map(([pid]) => pid);
  return roots.length ? Math.min(...roots) : undefined;
}

/**
 * The compute container of launcher pod `pod`, seen from the host; throws naming the pod
 * when it cannot be found.
 */
export async function detectLauncherIsolation(pod: Pod, procRoot = '/proc'): Promise<LauncherIsolation> {
  const subject = `launcher pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const id = computeContainerId(pod);
  if (!id) throw new Error(`${subject}: status.containerStatuses[compute].containerID: not known yet`);
  const pid = await containerPid(id, procRoot);
  if (pid === undefined)
    throw new Error(
      `${subject}: no process of container ${id.slice(0, 12)} in ${procRoot} (is virt-handler in the host's PID namespace, hostPID?)`,
    );
  const dir = join(procRoot, String(pid));
  return { pid, netns: join(dir, 'ns', 'net'), root: join(dir, 'root') };
}
