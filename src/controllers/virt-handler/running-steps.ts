/**
 * The handler's live changes to a running domain, in order, through its launcher: volume
 * hotplug and memory dumps (./volume-steps), NIC hotplug (a launcher sync when the NICs
 * on secondary networks the domain has differ from the VMI's: the launcher plugs those
 * its pod has and unplugs the absent ones), then CPU and memory hotplug in the pod the
 * migration brought the guest to (./cpu-hotplug); and what they change in the status the
 * handler writes.
 */
import type { VirtualMachineInstance, VolumeStatus } from '../../api/generated/types';
import { isSecondaryMultus } from '../common/multus';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import { cpuHotplugDue, memoryHotplugDue, withCpusHotplugged, withMemoryHotplugged } from './cpu-hotplug';
import type { BlockHotplug } from './hotplug-block';
import type { HotplugMounts } from './hotplug-mounts';
import type { LauncherCalls } from './launcher-calls';
import { volumeSteps } from './volume-steps';

/** What {@link runningSteps} did. */
export interface RunningSteps {
  /** The domain after a launcher sync, if one ran. */
  domain?: LauncherDomain;
  /** The volume statuses to write, when something changed. */
  volumeStatus?: VolumeStatus[];
  cpusHotplugged: boolean;
  memoryHotplugged: boolean;
  /** Look again in this many ms (something waits or failed). */
  again?: number;
}

/** What the steps use of the handler. */
export interface RunningStepsDeps {
  nodeName: string;
  mounts: HotplugMounts;
  /** Block-mode claims' devices (a node with a kubelet); without it they are refused. */
  block?: BlockHotplug;
  calls: LauncherCalls;
  warn(message: string): void;
}

/**
 * Whether the running domain's NICs on secondary networks (as its launcher last said)
 * differ from what the VMI asks: one it lacks, or one set absent that it still has.
 */
export function nicSyncDue(vmi: VirtualMachineInstance, domain: LauncherDomain): boolean {
  const secondary = new Set((vmi.spec.networks ?? []).filter(isSecondaryMultus).map((n) => n.name));
  const ifaces = (vmi.spec.domain.devices.interfaces ?? []).filter((i) => secondary.has(i.name) && !i.sriov);
  const have = domain.secondaryInterfaces;
  if (have === undefined) return ifaces.length > 0;
  const wanted = ifaces.filter((i) => i.state !== 'absent').map((i) => i.name);
  return wanted.length !== have.length || wanted.some((n) => !have.includes(n));
}

/** Runs the steps for the running `domain` of `vmi` in pod `podUid`. */
export async function runningSteps(
  vmi: VirtualMachineInstance,
  podUid: string,
  domain: LauncherDomain,
  d: RunningStepsDeps,
): Promise<RunningSteps> {
  const uid = vmi.metadata?.uid ?? '';
  const out: RunningSteps = { cpusHotplugged: false, memoryHotplugged: false };
  // Volume hotplug and memory dumps (./volume-steps).
  const steps = await volumeSteps(vmi, podUid, domain, d.mounts, d.calls, d.block);
  if (steps.domain) out.domain = steps.domain;
  out.volumeStatus = steps.volumeStatus;
  if (steps.waiting) out.again = 1_000;
  // NIC hotplug: the launcher's sync plugs and unplugs (its ./hotplug-nics).
  const now = out.domain ?? domain;
  if (nicSyncDue(vmi, now)) {
    const r = await d.calls.call(podUid, uid, (c) => c.syncVirtualMachine(vmi));
    if (!r.ok) {
      d.warn(`NIC hotplug: ${r.error.message}`);
      out.again = 5_000;
    } else {
      const again = await d.calls.call(
        podUid,
        uid,
        (c) => c.getDomain() as Promise<LauncherDomain | undefined>,
      );
      if (again.ok && again.value) out.domain = again.value;
    }
  }
  // CPU hotplug, in the pod the migration brought the guest to (./cpu-hotplug).
  if (cpuHotplugDue(vmi, d.nodeName)) {
    const r = await d.calls.call(podUid, uid, (c) => c.syncVirtualMachineCPUs(vmi));
    if (r.ok) out.cpusHotplugged = true;
    else {
      d.warn(`CPU hotplug: ${r.error.message}`);
      out.again = 5_000;
    }
  }
  if (memoryHotplugDue(vmi, d.nodeName)) {
    const r = await d.calls.call(podUid, uid, (c) => c.syncVirtualMachineMemory(vmi));
    if (r.ok) out.memoryHotplugged = true;
    else {
      d.warn(`memory hotplug: ${r.error.message}`);
      out.again = 5_000;
    }
  }
  return out;
}

/** `next` (the status the handler computed) with what the steps changed. */
export function withRunningSteps(
  vmi: VirtualMachineInstance,
  next: VirtualMachineInstance,
  steps: RunningSteps | undefined,
): VirtualMachineInstance {
  if (!steps) return next;
  let out = next;
  if (steps.volumeStatus && out.status)
    out = { ...out, status: { ...out.status, volumeStatus: steps.volumeStatus } };
  if (steps.cpusHotplugged) out = withCpusHotplugged(vmi, out);
  if (steps.memoryHotplugged) out = withMemoryHotplugged(vmi, out);
  return out;
}
