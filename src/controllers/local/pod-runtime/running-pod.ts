/** What the pod runtime keeps of a pod's process while it runs, and how it stops one. */
import type { Pod } from '../../common/pod';
import type { PodNetworkInfo } from './pod-network';
import type { PodProbes } from './pod-probes';
import { type ProcessRecord, signalGroup, signalMain } from './processes';

/** A pod's process, started or adopted by the runtime. */
export interface Running {
  record: ProcessRecord;
  /** Set for processes this runtime started (their exit code is known). */
  exit?: Promise<number>;
  exited?: number;
  /** Set when the process was found gone without a known exit code. */
  lost?: boolean;
  killTimer?: NodeJS.Timeout;
  net?: PodNetworkInfo;
  /** The compute container's readiness and liveness probes, while it runs. */
  probes?: PodProbes;
}

/** The grace a pod's containers get to stop (kubelet's: the deletion's, else the pod's, else 30 s). */
export function graceSeconds(pod: Pod): number {
  return pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
}

/**
 * SIGTERM to the main process, SIGKILL to its group after `graceMs`; once (a stop under
 * way is left alone).
 */
export function stopGracefully(r: Running, graceMs: number): void {
  if (r.killTimer) return;
  signalMain(r.record, 'SIGTERM');
  r.killTimer = setTimeout(() => signalGroup(r.record, 'SIGKILL'), graceMs);
  r.killTimer.unref?.();
}
