/**
 * A DataVolume's status as CDI writes it: a phase, `progress`, `restartCount`, the claim's
 * name, and always the three conditions Bound, Ready and Running (lastTransitionTime moves
 * only when a condition's status changes; lastHeartbeatTime on every change).
 */
import type { DataVolumeCondition, DataVolumeStatus } from '../../api/generated/cdi/types';

/** CDI's DataVolume phases this controller uses. */
export const DvPhase = {
  Pending: 'Pending',
  PVCBound: 'PVCBound',
  ImportScheduled: 'ImportScheduled',
  ImportInProgress: 'ImportInProgress',
  CloneScheduled: 'CloneScheduled',
  CSICloneInProgress: 'CSICloneInProgress',
  CloneFromSnapshotSourceInProgress: 'CloneFromSnapshotSourceInProgress',
  WaitForFirstConsumer: 'WaitForFirstConsumer',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
} as const;

/** CDI's event reasons and messages. */
export const DvEvent = {
  Pending: 'Pending',
  Bound: 'Bound',
  ImportScheduled: 'ImportScheduled',
  ImportInProgress: 'ImportInProgress',
  ImportSucceeded: 'ImportSucceeded',
  ImportFailed: 'ImportFailed',
  CloneScheduled: 'CloneScheduled',
  CloneSucceeded: 'CloneSucceeded',
  CloneWithoutSource: 'CloneWithoutSource',
  CloneSourceInUse: 'CloneSourceInUse',
  CloneValidationFailed: 'CloneValidationFailed',
  /** The importer's own error (CDI's pod-error reason). */
  Error: 'Error',
  ErrResourceExists: 'ErrResourceExists',
  ErrClaimNotValid: 'ErrClaimNotValid',
  InvalidSpec: 'ErrInvalidSpec',
} as const;

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** One condition's wanted state. */
export interface WantedCondition {
  status: ConditionStatus;
  reason?: string;
  message?: string;
}

/** What the reconcile decided the status is. */
export interface WantedStatus {
  phase: string;
  claimName?: string;
  progress: string;
  restartCount: number;
  bound: WantedCondition;
  ready: WantedCondition;
  running: WantedCondition;
}

function condition(
  type: string,
  wanted: WantedCondition,
  previous: DataVolumeCondition | undefined,
  now: string,
): DataVolumeCondition {
  const same =
    previous !== undefined &&
    previous.status === wanted.status &&
    (previous.reason ?? '') === (wanted.reason ?? '') &&
    (previous.message ?? '') === (wanted.message ?? '');
  if (same) return previous;
  return {
    type,
    status: wanted.status,
    ...(wanted.reason ? { reason: wanted.reason } : {}),
    ...(wanted.message ? { message: wanted.message } : {}),
    lastHeartbeatTime: now,
    lastTransitionTime:
      previous && previous.status === wanted.status ? (previous.lastTransitionTime ?? now) : now,
  };
}

/** The status object for `wanted`, reusing unchanged conditions of `previous`. */
export function renderStatus(
  previous: DataVolumeStatus | undefined,
  wanted: WantedStatus,
  now: string,
): DataVolumeStatus {
  const prev = (t: string) => previous?.conditions?.find((c) => c.type === t);
  return {
    ...(wanted.claimName ? { claimName: wanted.claimName } : {}),
    phase: wanted.phase,
    progress: wanted.progress,
    restartCount: wanted.restartCount,
    conditions: [
      condition('Bound', wanted.bound, prev('Bound'), now),
      condition('Ready', wanted.ready, prev('Ready'), now),
      condition('Running', wanted.running, prev('Running'), now),
    ],
  };
}

/** The Bound condition of a claim (CDI's updateBoundCondition). */
export function boundCondition(
  claim: { metadata?: { name?: string }; status?: { phase?: string } } | undefined,
): WantedCondition {
  if (!claim) return { status: 'Unknown', message: 'No PVC found', reason: 'NotFound' };
  const name = claim.metadata?.name ?? '';
  if (claim.status?.phase === 'Bound')
    return { status: 'True', reason: 'Bound', message: `PVC ${name} Bound` };
  if (claim.status?.phase === 'Lost')
    return { status: 'False', reason: 'ClaimLost', message: `PVC ${name} Lost` };
  return { status: 'False', reason: 'Pending', message: `PVC ${name} Pending` };
}
