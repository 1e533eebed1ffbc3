/**
 * Crash-loop backoff of VMs whose VMIs fail before ever running, with upstream's timing
 * (calculateStartBackoffTime and syncStartFailureStatus in pkg/virt-controller/watch/vm/vm.go).
 */

/** Upstream's cap on the delay, in seconds. */
export const MAX_CRASH_LOOP_BACKOFF_SECONDS = 300;

/**
 * Seconds to wait before starting again after `failCount` consecutive start failures:
 * interval * failCount^2 plus up to half of that at random, capped at maxDelay, where
 * interval = max(10, maxDelay / 30). `random` returns an integer in [0, n).
 */
export function startBackoffSeconds(
  failCount: number,
  maxDelay = MAX_CRASH_LOOP_BACKOFF_SECONDS,
  random: (n: number) => number = (n) => Math.floor(Math.random() * n),
): number {
  const count = failCount <= 0 ? 1 : failCount;
  const multiplier = count ** 2;
  const interval = Math.max(10, Math.trunc(maxDelay / 30));
  let delay = interval * multiplier;
  const randomRange = Math.trunc(delay / 2) + 1;
  delay += random(randomRange);
  return Math.min(delay, maxDelay);
}

/** `status.startFailure` of a VM. */
export interface StartFailure {
  consecutiveFailCount?: number;
  lastFailedVMIUID?: string;
  retryAfterTimestamp?: string;
}

/** The VMI facts the start-failure tracking reads. */
export interface VmiRunHistory {
  uid: string;
  phase?: string;
  /** Whether `status.phaseTransitionTimestamps` ever recorded Running. */
  everRunning: boolean;
}

/**
 * upstream syncStartFailureStatus: the new `status.startFailure` (undefined clears it).
 * Cleared when the VMI ever ran or the strategy does not restart failed VMIs; a VMI that
 * failed before running counts one more failure (once per VMI uid).
 */
export function nextStartFailure(
  current: StartFailure | undefined,
  runStrategy: string,
  vmi: VmiRunHistory | undefined,
  now: Date,
  random?: (n: number) => number,
): StartFailure | undefined {
  if (vmi?.everRunning) return undefined;
  if (runStrategy !== 'Always' && runStrategy !== 'RerunOnFailure' && runStrategy !== 'Once')
    return undefined;
  const failedEarly =
    vmi !== undefined && (vmi.phase === 'Failed' || vmi.phase === 'Succeeded') && !vmi.everRunning;
  if (!vmi || !failedEarly) return current;
  if (current?.lastFailedVMIUID === vmi.uid) return current;
  const count = (current?.consecutiveFailCount ?? 0) + 1;
  const delay = startBackoffSeconds(count, MAX_CRASH_LOOP_BACKOFF_SECONDS, random);
  return {
    consecutiveFailCount: count,
    lastFailedVMIUID: vmi.uid,
    retryAfterTimestamp: new Date(now.getTime() + delay * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
}

/** Whole seconds left until `retryAfterTimestamp` (0 when passed or absent), as upstream rounds. */
export function backoffSecondsLeft(failure: StartFailure | undefined, now: Date): number {
  if (!failure?.retryAfterTimestamp) return 0;
  const retry = Math.floor(Date.parse(failure.retryAfterTimestamp) / 1000);
  const diff = retry - Math.floor(now.getTime() / 1000);
  return Math.max(diff, 0);
}
