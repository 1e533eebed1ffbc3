/**
 * The handler's volume work for a running domain, in order: volume hotplug
 * (./hotplug-volumes: mount, attach, detach, unmount) and then memory dumps
 * (./memory-dump-volumes: mount the claim, dump, report, unmount), each through the
 * launcher of pod `podUid`.
 */
import type { VirtualMachineInstance, VolumeStatus } from '../../api/generated/types';
import { LAUNCHER_DIRS } from '../common/launcher-args';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import type { BlockHotplug } from './hotplug-block';
import type { HotplugMounts } from './hotplug-mounts';
import { hotplugStep } from './hotplug-volumes';
import type { LauncherCalls } from './launcher-calls';
import { memoryDumpStep } from './memory-dump-volumes';

export interface VolumeSteps {
  /** The statuses to write, when something changed. */
  volumeStatus?: VolumeStatus[];
  /** The domain after a launcher sync, if one ran. */
  domain?: LauncherDomain;
  /** Something waits (a mount, a dump): look again soon. */
  waiting: boolean;
}

export async function volumeSteps(
  vmi: VirtualMachineInstance,
  podUid: string,
  domain: LauncherDomain,
  mounts: HotplugMounts,
  calls: LauncherCalls,
  block?: BlockHotplug,
): Promise<VolumeSteps> {
  const uid = vmi.metadata?.uid ?? '';
  const hp = await hotplugStep(
    vmi,
    podUid,
    domain,
    mounts,
    async (v) => {
      const r = await calls.call(podUid, uid, (c) => c.syncVirtualMachine(v));
      if (!r.ok) throw r.error;
      const again = await calls.call(
        podUid,
        uid,
        (c) => c.getDomain() as Promise<LauncherDomain | undefined>,
      );
      return again.ok ? again.value : domain;
    },
    block,
  );
  const now = hp.domain ?? domain;
  const withHotplug = hp.volumeStatus
    ? { ...vmi, status: { ...vmi.status, volumeStatus: hp.volumeStatus } }
    : vmi;
  const md = await memoryDumpStep(
    withHotplug,
    podUid,
    now,
    mounts,
    LAUNCHER_DIRS.hotplugDisks,
    async (path) => {
      const r = await calls.call(podUid, uid, (c) => c.virtualMachineMemoryDump(vmi, path));
      if (!r.ok) throw r.error;
    },
  );
  return {
    volumeStatus: md.volumeStatus ?? hp.volumeStatus,
    domain: hp.domain,
    waiting: hp.waiting || md.waiting,
  };
}
