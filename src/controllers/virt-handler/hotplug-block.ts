/**
 * A hotplugged block-mode claim's way into the launcher pod (upstream's
 * mountBlockHotplugVolume): the attachment pod maps the claim's device under its own
 * `hotplug-disks` emptyDir (`/path/<volume>/disk`, virt-controller's attachment pod), so
 * the runtime's device node for it is a file of the kubelet's pods directory, which the
 * handler sees on every node. The handler reads its major:minor, makes a node with the
 * same numbers at `<volume>` (no `.img`) in the launcher pod's `hotplug-disks` emptyDir,
 * owned by QEMU's user, and allows the device in the compute container's devices cgroup
 * (./device-cgroup); the launcher's driver attaches it as a `block` disk. Taking it away:
 * the device is denied again and the node removed.
 */
import { chown, lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../common/pod';
import { runTool } from '../common/run-tool';
import { podEmptyDirPath } from '../launcher-protocol/paths';
import { DeviceCgroup, type DeviceNumbers, splitDev } from './device-cgroup';
import { HOTPLUG_DISKS_VOLUME } from './hotplug-mounts';
import { computeContainerId, containerPid } from './isolation/launcher-process';

/** QEMU's user in the launcher (upstream's 107). */
const QEMU_UID = 107;
/** A volume name reaches a path: a DNS-1123 label only (as admission requires). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A pod UID reaches a path: a plain token. */
const POD_UID = /^[A-Za-z0-9-]+$/;

function checked(name: string, what: 'volume name' | 'pod uid'): string {
  const ok = what === 'volume name' ? DNS_LABEL.test(name) && name.length <= 63 : POD_UID.test(name);
  if (!ok)
    throw new Error(
      `${what} ${JSON.stringify(name)} is not ${what === 'volume name' ? 'a DNS-1123 label' : 'a plain token'}`,
    );
  return name;
}

export interface BlockHotplugOptions {
  /** The kubelet's pods directory as this handler sees it. */
  podsRoot: string;
  cgroup: DeviceCgroup;
  /** The host pid of launcher pod `podUid`'s compute container (undefined: not found). */
  launcherPid: (podUid: string) => Promise<number | undefined>;
  /** Runs mknod (tests may stub it). */
  run?: (cmd: string, args: string[]) => Promise<unknown>;
  /** Changes a file's owner (tests as non-root stub it). */
  chown?: (path: string, uid: number, gid: number) => Promise<void>;
}

/** Block devices of hotplugged block-mode claims in launcher pods. */
export class BlockHotplug {
  constructor(private readonly o: BlockHotplugOptions) {}

  /** The device node of volume `name` in launcher pod `podUid`'s hotplug directory. */
  target(launcherPodUid: string, name: string): string {
    return join(
      podEmptyDirPath(this.o.podsRoot, checked(launcherPodUid, 'pod uid'), HOTPLUG_DISKS_VOLUME),
      checked(name, 'volume name'),
    );
  }

  /**
   * The numbers of the claim's device in attachment pod `attachPodUid` (the only block
   * device in its `hotplug-disks/<volume>/`), or undefined while the runtime has not made it.
   */
  async source(attachPodUid: string, name: string): Promise<DeviceNumbers | undefined> {
    const dir = join(
      podEmptyDirPath(this.o.podsRoot, checked(attachPodUid, 'pod uid'), HOTPLUG_DISKS_VOLUME),
      checked(name, 'volume name'),
    );
    for (const entry of await readdir(dir).catch(() => [] as string[])) {
      // lstat: a symlink there is not followed out of the pod's directory.
      const st = await lstat(join(dir, entry), { bigint: true });
      if (st.isBlockDevice()) return splitDev(st.rdev);
    }
    return undefined;
  }

  /**
   * Puts volume `name`'s device from attachment pod `attachPodUid` into launcher pod
   * `launcherPodUid` and allows it there. False while the device is not there yet. A node
   * of the same numbers already there is kept (the step runs again after a restart).
   */
  async attach(attachPodUid: string, launcherPodUid: string, name: string): Promise<boolean> {
    const dev = await this.source(attachPodUid, name);
    if (!dev) return false;
    const pid = await this.pid(launcherPodUid);
    // Before the node: a host without v1 device control refuses here, leaving nothing behind.
    await this.o.cgroup.dir(pid);
    const target = this.target(launcherPodUid, name);
    const have = await this.nodeAt(target);
    if (have && (have.major !== dev.major || have.minor !== dev.minor))
      throw new Error(
        `${target} is device ${have.major}:${have.minor}, not the claim's ${dev.major}:${dev.minor}`,
      );
    if (!have) {
      await (this.o.run ?? runTool)('mknod', [
        '-m',
        '0660',
        target,
        'b',
        String(dev.major),
        String(dev.minor),
      ]);
      await (this.o.chown ?? chown)(target, QEMU_UID, QEMU_UID);
    }
    await this.o.cgroup.allow(pid, dev);
    return true;
  }

  /** Denies volume `name`'s device in launcher pod `launcherPodUid` again and removes its node (idempotent). */
  async detach(launcherPodUid: string, name: string): Promise<void> {
    const target = this.target(launcherPodUid, name);
    const dev = await this.nodeAt(target);
    if (!dev) return;
    const pid = await this.o.launcherPid(launcherPodUid);
    // A launcher gone takes its cgroup with it: only the node is left to remove.
    if (pid !== undefined) await this.o.cgroup.deny(pid, dev);
    await rm(target, { force: true });
  }

  /** Whether volume `name` of launcher pod `launcherPodUid` is a block device node there. */
  async has(launcherPodUid: string, name: string): Promise<boolean> {
    return (await this.nodeAt(this.target(launcherPodUid, name))) !== undefined;
  }

  private async pid(launcherPodUid: string): Promise<number> {
    const pid = await this.o.launcherPid(launcherPodUid);
    if (pid === undefined)
      throw new Error(`no compute container process found for launcher pod ${launcherPodUid}`);
    return pid;
  }

  /** The numbers of the block device node at `path`; undefined when absent; throws for another kind of file. */
  private async nodeAt(path: string): Promise<DeviceNumbers | undefined> {
    const st = await lstat(path, { bigint: true }).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (!st) return undefined;
    if (!st.isBlockDevice()) throw new Error(`${path} exists and is not a block device`);
    return splitDev(st.rdev);
  }
}

/**
 * The block hotplug of a handler on a kubelet node: the launcher's process is found in
 * `procRoot` (the host's /proc, hostPID) from pod `podOf(uid)`'s compute container, its
 * cgroup under `cgroupRoot` (./device-cgroup's default when unset). None without
 * `procRoot` (local mode: no kubelet, no launcher processes to find).
 */
export function nodeBlockHotplug(
  o: { podsRoot: string; procRoot?: string; cgroupRoot?: string },
  podOf: (uid: string) => Pod | undefined,
): BlockHotplug | undefined {
  const { podsRoot, procRoot, cgroupRoot } = o;
  if (!procRoot) return undefined;
  return new BlockHotplug({
    podsRoot,
    cgroup: new DeviceCgroup({ procRoot, cgroupRoot }),
    launcherPid: async (uid) => {
      const pod = podOf(uid);
      const id = pod && computeContainerId(pod);
      return id ? containerPid(id, procRoot) : undefined;
    },
  });
}
