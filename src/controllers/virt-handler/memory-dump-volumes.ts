/**
 * virt-handler's part of a memory dump (upstream's updateMemoryDumpInfo and getMemoryDump):
 * a memory dump volume whose attachment pod runs (AttachedToNode) has its claim's
 * directory bind-mounted into the launcher pod and goes `MemoryDumpInProgress` with a
 * target file name (`<vmi>-<volume>-<YYYYMMDD-hhmmss>.memory.dump`); the launcher is asked
 * to dump there (repeated until its report names that file: it ignores repeats) and the
 * volume goes `MemoryDumpCompleted` or `MemoryDumpFailed` with the launcher's timestamps.
 * When the VM controller takes the volume out of the VMI's spec, the directory is
 * unmounted (UnMountedFromPod) and virt-controller deletes the attachment pod.
 */
import type { VirtualMachineInstance, VolumeStatus } from '../../api/generated/types';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import type { HotplugMounts } from './hotplug-mounts';

/** Upstream's memory dump volume phases. */
export const MemoryDumpVolumePhase = {
  InProgress: 'MemoryDumpInProgress',
  Completed: 'MemoryDumpCompleted',
  Failed: 'MemoryDumpFailed',
} as const;

const MOUNTED = new Set<string>([
  MemoryDumpVolumePhase.InProgress,
  MemoryDumpVolumePhase.Completed,
  MemoryDumpVolumePhase.Failed,
  'Detaching',
]);

/** upstream dumpTargetFile: `<vmi>-<volume>-<YYYYMMDD-hhmmss>.memory.dump` (UTC). */
export function dumpTargetFile(vmiName: string, volume: string, now: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}-${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`;
  return `${vmiName}-${volume}-${stamp}.memory.dump`;
}

export interface MemoryDumpStep {
  volumeStatus?: VolumeStatus[];
  /** A dump runs or a mount waits: look again soon. */
  waiting: boolean;
}

/**
 * One pass over `vmi`'s memory dump volumes with its launcher pod `podUid` and `domain`;
 * `dump` asks the launcher to dump into a launcher-side path. `launcherDir` is the
 * launcher's hotplug directory.
 */
export async function memoryDumpStep(
  vmi: VirtualMachineInstance,
  podUid: string,
  domain: LauncherDomain | undefined,
  mounts: HotplugMounts,
  launcherDir: string,
  dump: (path: string) => Promise<void>,
  now: () => Date = () => new Date(),
): Promise<MemoryDumpStep> {
  const statuses = vmi.status?.volumeStatus ?? [];
  if (!statuses.some((s) => s.memoryDumpVolume)) return { waiting: false };
  const inSpec = new Set((vmi.spec.volumes ?? []).filter((v) => v.memoryDump).map((v) => v.name));
  const next = statuses.map((s) => ({ ...s }));
  let changed = false;
  let waiting = false;
  for (const s of next) {
    const info = s.memoryDumpVolume;
    if (!info) continue;
    if (!inSpec.has(s.name)) {
      // Taken out of the spec: unmount (virt-controller keeps the entry Detaching until then).
      if (MOUNTED.has(s.phase ?? '') && s.hotplugVolume) {
        await mounts.unmountDir(podUid, s.name);
        Object.assign(s, {
          phase: 'UnMountedFromPod',
          reason: 'VolumeUnMountedFromPod',
          message: `Volume ${s.name} has been unmounted from virt-launcher pod`,
        });
        changed = true;
      }
      continue;
    }
    if (s.phase === 'AttachedToNode' && s.hotplugVolume?.attachPodUID) {
      if (s.persistentVolumeClaimInfo?.volumeMode === 'Block') {
        const message = `Volume ${s.name}: a memory dump needs a Filesystem claim`;
        if (s.message !== message) {
          Object.assign(s, { reason: 'BlockMemoryDumpNotSupported', message });
          changed = true;
        }
        continue;
      }
      const dir = await mounts.claimDir(s.hotplugVolume.attachPodUID);
      if (!dir) {
        waiting = true;
        continue;
      }
      await mounts.mountDir(dir, podUid, s.name);
      Object.assign(s, {
        phase: MemoryDumpVolumePhase.InProgress,
        reason: 'VolumeMountedToPod',
        message: `Memory dump Volume ${s.name} is attached, getting memory dump`,
        memoryDumpVolume: {
          ...info,
          targetFileName: dumpTargetFile(vmi.metadata?.name ?? '', s.name, now()),
        },
      });
      changed = true;
    }
    if (s.phase !== MemoryDumpVolumePhase.InProgress) continue;
    const target = s.memoryDumpVolume?.targetFileName ?? '';
    const meta = domain?.memoryDump;
    waiting = true;
    if (!meta || meta.fileName !== target) {
      await dump(`${launcherDir}/${s.name}/${target}`);
      continue;
    }
    const volumeInfo = { ...s.memoryDumpVolume, startTimestamp: meta.startTimestamp };
    if (meta.endTimestamp && meta.failed) {
      Object.assign(s, {
        phase: MemoryDumpVolumePhase.Failed,
        message: `Memory dump to pvc ${s.name} failed: ${meta.failureReason ?? ''}`,
        memoryDumpVolume: { ...volumeInfo, endTimestamp: meta.endTimestamp },
      });
    } else if (meta.completed) {
      Object.assign(s, {
        phase: MemoryDumpVolumePhase.Completed,
        reason: 'VolumeReady',
        message: `Memory dump to Volume ${s.name} has completed successfully`,
        memoryDumpVolume: { ...volumeInfo, endTimestamp: meta.endTimestamp },
      });
    } else if (s.memoryDumpVolume?.startTimestamp === meta.startTimestamp) continue;
    else s.memoryDumpVolume = volumeInfo;
    changed = true;
  }
  return { volumeStatus: changed ? next : undefined, waiting };
}
