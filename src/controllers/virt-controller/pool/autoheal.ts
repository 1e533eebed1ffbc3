/**
 * Pool autohealing (upstream filterFailingVMsToStart in pkg/virt-controller/watch/pool):
 * with `spec.autohealing` set, a VM is replaced (deleted; the pool's scale-out then
 * creates a fresh one) when its VMIs failed to start `startUpFailureThreshold` times in a
 * row (the VM controller's `status.startFailure.consecutiveFailCount`, default 3), or when
 * its printableStatus says it cannot start (CrashLoopBackOff, Unschedulable,
 * DataVolumeError, PvcNotFound, ErrImagePull, ImagePullBackOff) and its Ready condition
 * has been False for `minFailingToStartDuration` (default 5m).
 */
import { parseDuration } from '../../../api/duration';
import type { VirtualMachine, VirtualMachinePoolAutohealingStrategy } from '../../../api/generated/types';

/** Upstream defaultStartUpFailureThreshold. */
export const DEFAULT_STARTUP_FAILURE_THRESHOLD = 3;
/** Upstream minFailingToStartDuration (5 minutes), in milliseconds. */
export const DEFAULT_MIN_FAILING_TO_START_MS = 5 * 60_000;

const FAILING_STATUSES = new Set([
  'CrashLoopBackOff',
  'Unschedulable',
  'DataVolumeError',
  'PvcNotFound',
  'ErrImagePull',
  'ImagePullBackOff',
]);

/** Milliseconds a VM must have been failing before it is replaced. */
export function minFailingMs(a: VirtualMachinePoolAutohealingStrategy): number {
  return a.minFailingToStartDuration === undefined
    ? DEFAULT_MIN_FAILING_TO_START_MS
    : parseDuration(a.minFailingToStartDuration, 'spec.autohealing.minFailingToStartDuration');
}

/**
 * Whether `vm` is to be replaced now; otherwise, when it is failing but not yet long
 * enough, `retryInMs` says when to look again.
 */
export function autohealVerdict(
  vm: VirtualMachine,
  a: VirtualMachinePoolAutohealingStrategy,
  now: Date,
): { replace: boolean; retryInMs?: number } {
  const threshold = a.startUpFailureThreshold ?? DEFAULT_STARTUP_FAILURE_THRESHOLD;
  if ((vm.status?.startFailure?.consecutiveFailCount ?? 0) >= threshold) return { replace: true };
  if (!FAILING_STATUSES.has(vm.status?.printableStatus ?? '')) return { replace: false };
  const ready = vm.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'False') return { replace: false };
  // Upstream measures from lastProbeTime; this project's VM conditions carry lastTransitionTime.
  const since = Date.parse(String(ready.lastProbeTime ?? ready.lastTransitionTime ?? ''));
  if (Number.isNaN(since)) return { replace: false };
  const left = since + minFailingMs(a) - now.getTime();
  return left <= 0 ? { replace: true } : { replace: false, retryInMs: left };
}

/** The pool VMs autohealing replaces now, and the soonest time to look again (ms), if any. */
export function failingVms(
  vms: readonly VirtualMachine[],
  a: VirtualMachinePoolAutohealingStrategy,
  now: Date,
): { replace: VirtualMachine[]; retryInMs?: number } {
  const replace: VirtualMachine[] = [];
  let retryInMs: number | undefined;
  for (const vm of vms) {
    if (vm.metadata?.deletionTimestamp) continue;
    const v = autohealVerdict(vm, a, now);
    if (v.replace) replace.push(vm);
    else if (v.retryInMs !== undefined) retryInMs = Math.min(retryInMs ?? v.retryInMs, v.retryInMs);
  }
  return { replace, retryInMs };
}
