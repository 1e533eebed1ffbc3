/**
 * virt-handler's part of volume hotplug (upstream's hotplug volume mounting and status):
 * a volume whose attachment pod runs (AttachedToNode) is mounted into the launcher pod
 * (MountedToPod, ./hotplug-mounts), the launcher is synced so the guest gets the disk,
 * and the volume is Ready once the domain has it; a volume taken out of the spec is
 * detached by the same launcher sync and then unmounted (UnMountedFromPod), after which
 * virt-controller deletes its attachment pod. A block-mode claim's device node is put into
 * the launcher pod instead of a file (./hotplug-block), and taken out again the same way.
 */
import type { VirtualMachineInstance, VolumeStatus } from '../../api/generated/types';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import { CgroupV2Error } from './device-cgroup';
import type { BlockHotplug } from './hotplug-block';
import type { HotplugMounts } from './hotplug-mounts';

const hotNames = (vmi: VirtualMachineInstance) =>
  new Set(
    (vmi.spec.volumes ?? [])
      .filter((v) => v.persistentVolumeClaim?.hotpluggable || v.dataVolume?.hotpluggable)
      .map((v) => v.name),
  );

const IN_POD = new Set(['MountedToPod', 'Ready']);

const isBlock = (s: VolumeStatus) => s.persistentVolumeClaimInfo?.volumeMode === 'Block';

/** The reason on a block-mode volume this node cannot hotplug (the message says why). */
export const BLOCK_HOTPLUG_NOT_SUPPORTED = 'BlockHotplugNotSupported';

/** What one hotplug step changed: the statuses to write, the domain after a launcher sync. */
export interface HotplugStep {
  volumeStatus?: VolumeStatus[];
  domain?: LauncherDomain;
  /** A volume waits for the kubelet (its claim not mounted in the attachment pod yet): look again. */
  waiting: boolean;
}

/**
 * One pass over `vmi`'s hotplug volumes with its launcher pod `podUid` and `domain`;
 * `sync` sends the launcher the VMI (with the statuses so far) and returns its domain;
 * `block` puts block-mode claims' devices in (without it they are refused on the volume).
 */
export async function hotplugStep(
  vmi: VirtualMachineInstance,
  podUid: string,
  domain: LauncherDomain | undefined,
  mounts: HotplugMounts,
  sync: (vmi: VirtualMachineInstance) => Promise<LauncherDomain | undefined>,
  block?: BlockHotplug,
): Promise<HotplugStep> {
  const statuses = vmi.status?.volumeStatus ?? [];
  const hot = hotNames(vmi);
  if (hot.size === 0 && !statuses.some((s) => s.hotplugVolume)) return { waiting: false };
  const next = statuses.map((s) => ({ ...s }));
  let changed = false;
  let waiting = false;
  const field = (name: string) =>
    `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name} volume ${name}`;
  for (const s of next) {
    if (!hot.has(s.name) || s.phase !== 'AttachedToNode' || !s.hotplugVolume?.attachPodUID) continue;
    if (isBlock(s)) {
      // Said on the volume rather than waited on silently: this node cannot do it.
      const refuse = (why: string) => {
        const message = `Volume ${s.name}: hotplugging a block-mode claim ${why}; use a Filesystem claim`;
        if (s.message === message) return;
        Object.assign(s, { reason: BLOCK_HOTPLUG_NOT_SUPPORTED, message });
        changed = true;
      };
      if (!block) {
        refuse("needs virt-handler on a kubelet node (the host's /proc and cgroups)");
        continue;
      }
      const placed = await block.attach(s.hotplugVolume.attachPodUID, podUid, s.name).catch((e) => {
        if (!(e instanceof CgroupV2Error)) throw e;
        refuse(`needs cgroup v1 device control on this node: ${e.message}`);
        return undefined;
      });
      if (placed === false) waiting = true;
      if (!placed) continue;
    } else {
      const dir = await mounts.claimDir(s.hotplugVolume.attachPodUID);
      if (!dir) {
        waiting = true;
        continue;
      }
      const img = await mounts.diskImage(dir, s.persistentVolumeClaimInfo, field(s.name));
      await mounts.mount(img, podUid, s.name);
    }
    Object.assign(s, {
      phase: 'MountedToPod',
      reason: 'VolumeMountedToPod',
      message: `Volume ${s.name} has been mounted in virt-launcher pod`,
    });
    changed = true;
  }
  let attached = new Set(domain?.hotplugVolumes ?? []);
  const wanted = next.filter((s) => hot.has(s.name) && IN_POD.has(s.phase ?? '')).map((s) => s.name);
  let after = domain;
  if (wanted.some((n) => !attached.has(n)) || [...attached].some((n) => !hot.has(n))) {
    after = await sync({ ...vmi, status: { ...vmi.status, volumeStatus: structuredClone(next) } });
    attached = new Set(after?.hotplugVolumes ?? []);
  }
  for (const s of next) {
    if (hot.has(s.name) && s.phase === 'MountedToPod' && attached.has(s.name)) {
      Object.assign(s, {
        phase: 'Ready',
        reason: 'VolumeReady',
        message: `Successfully attach hotplugged volume ${s.name} to VM`,
      });
      changed = true;
    }
    // A memory dump volume is a mounted directory, not a disk (./memory-dump-volumes).
    const gone =
      !hot.has(s.name) &&
      s.hotplugVolume &&
      !s.memoryDumpVolume &&
      (s.phase === 'Detaching' || IN_POD.has(s.phase ?? ''));
    if (gone && !attached.has(s.name)) {
      if (isBlock(s)) await block?.detach(podUid, s.name);
      else await mounts.unmount(podUid, s.name);
      Object.assign(s, {
        phase: 'UnMountedFromPod',
        reason: 'VolumeUnMountedFromPod',
        message: `Volume ${s.name} has been unmounted from virt-launcher pod`,
      });
      changed = true;
    }
  }
  return { volumeStatus: changed ? next : undefined, domain: after, waiting };
}
