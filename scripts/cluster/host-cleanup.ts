/**
 * What a cluster leaves on the host outside its processes: mounts under the state
 * directory (the kubelet's rshared root, pod volumes, containerd's rootfs and netns
 * mounts), the bridge, and the kubelet's kubepods cgroups. `down` removes them;
 * {@link leftovers} lists any that remain (tests assert it is empty).
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { extraNodeLeftovers } from './extra-node';
import { firewallBefore } from './host-state';
import { serviceTablesLeft } from './kube-proxy';
import { linkExists } from './network';
import { run } from './state';

const CGROUP_ROOT = '/sys/fs/cgroup';

/** Mount points at or under `dir`, deepest first (mountinfo escapes spaces as \040). */
export function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) =>
      line
        .split(' ')[4]
        .replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8))),
    )
    .filter((m) => m === dir || m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/** Unmounts everything under `dir` (lazily where a plain unmount is refused). */
export function unmountUnder(dir: string): number {
  let count = 0;
  // Bind mounts may stack: repeat until nothing is left (bounded).
  for (let pass = 0; pass < 5; pass++) {
    const mounts = mountsUnder(dir);
    if (mounts.length === 0) break;
    for (const m of mounts) {
      try {
        run('umount', [m]);
      } catch {
        try {
          run('umount', ['-l', m]);
        } catch {
          // Gone with its parent already.
        }
      }
      count++;
    }
  }
  return count;
}

/** The kubepods cgroup directories, one per hierarchy that has one. */
export function kubepodsCgroups(): string[] {
  if (!existsSync(CGROUP_ROOT)) return [];
  const dirs: string[] = [];
  for (const hierarchy of readdirSync(CGROUP_ROOT)) {
    for (const name of ['kubepods', 'kubepods.slice']) {
      const d = join(CGROUP_ROOT, hierarchy, name);
      if (existsSync(d)) dirs.push(d);
    }
  }
  if (existsSync(join(CGROUP_ROOT, 'kubepods'))) dirs.push(join(CGROUP_ROOT, 'kubepods'));
  return dirs;
}

/** Removes a cgroup tree depth-first (a cgroup directory is removed with rmdir only). */
function removeCgroupTree(dir: string): void {
  for (const entry of readdirSync(dir)) {
    const child = join(dir, entry);
    if (statSync(child).isDirectory()) removeCgroupTree(child);
  }
  rmdirSync(dir);
}

/** Removes every kubepods cgroup; returns those that could not be removed (still in use). */
export function removeKubepodsCgroups(): string[] {
  const stuck: string[] = [];
  for (const d of kubepodsCgroups()) {
    try {
      removeCgroupTree(d);
    } catch (err) {
      stuck.push(`${d}: ${(err as Error).message}`);
    }
  }
  return stuck;
}

/** Everything a cluster in `stateDir` with `bridge` left behind, as readable lines. */
export function leftovers(stateDir: string, bridge: string): string[] {
  return [
    ...mountsUnder(stateDir).map((m) => `mount ${m}`),
    ...(linkExists(bridge) ? [`bridge ${bridge}`] : []),
    ...kubepodsCgroups().map((c) => `cgroup ${c}`),
    // A second node's namespaces (their processes), interfaces and cgroup root.
    ...extraNodeLeftovers(stateDir, bridge),
    // kube-proxy's tables and the project's (kube-proxy.ts) that up did not find there.
    ...serviceTablesLeft(bridge, firewallBefore(stateDir)).map((t) => `nftables ${t}`),
  ];
}
