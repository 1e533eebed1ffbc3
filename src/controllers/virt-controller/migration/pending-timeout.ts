/**
 * A migration target pod that never leaves Pending (upstream's handlePendingPodTimeout):
 * one the scheduler cannot place is given up after 5 minutes, one pending for any other
 * reason after 15; a migration may set its own through upstream's annotations. Pure.
 */
import type { VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type { Pod } from '../../common/pod';

/** Upstream's defaults (migration.go). */
export const DEFAULT_UNSCHEDULABLE_PENDING_TIMEOUT_SECONDS = 5 * 60;
export const DEFAULT_CATCH_ALL_PENDING_TIMEOUT_SECONDS = 15 * 60;

/** Upstream's annotations overriding the timeouts for one migration (seconds). */
export const MIGRATION_UNSCHEDULABLE_POD_TIMEOUT_ANNOTATION =
  'kubevirt.io/migrationUnschedulablePodTimeoutSeconds';
export const MIGRATION_PENDING_POD_TIMEOUT_ANNOTATION = 'kubevirt.io/migrationPendingPodTimeoutSeconds';

/** What to do about a pending target pod. */
export interface PendingVerdict {
  /** The scheduler cannot place it (PodScheduled=False, reason Unschedulable). */
  unschedulable: boolean;
  /** Give it up, with this reason. */
  timedOut?: string;
  /** Look again after so many ms. */
  recheckMs?: number;
}

function seconds(m: VirtualMachineInstanceMigration, annotation: string, fallback: number): number {
  const v = m.metadata?.annotations?.[annotation];
  // Upstream logs an unparsable value and keeps the default.
  return v !== undefined && /^-?\d+$/.test(v) ? Number(v) : fallback;
}

/** The verdict on `pod`, or undefined when it is not a pending pod (nothing to time). */
export function pendingTargetPodVerdict(
  m: VirtualMachineInstanceMigration,
  pod: Pod,
  now: Date,
  defaults = {
    unschedulable: DEFAULT_UNSCHEDULABLE_PENDING_TIMEOUT_SECONDS,
    catchAll: DEFAULT_CATCH_ALL_PENDING_TIMEOUT_SECONDS,
  },
): PendingVerdict | undefined {
  const created = pod.metadata?.creationTimestamp;
  if ((pod.status?.phase ?? 'Pending') !== 'Pending' || pod.metadata?.deletionTimestamp || !created)
    return undefined;
  const spent = Math.floor((now.getTime() - new Date(created).getTime()) / 1000);
  const unschedulableTimeout = seconds(
    m,
    MIGRATION_UNSCHEDULABLE_POD_TIMEOUT_ANNOTATION,
    defaults.unschedulable,
  );
  const catchAll = seconds(m, MIGRATION_PENDING_POD_TIMEOUT_ANNOTATION, defaults.catchAll);
  const unschedulable = (pod.status?.conditions ?? []).some(
    (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
  );
  const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  if (unschedulable && spent >= unschedulableTimeout)
    return { unschedulable, timedOut: `unschedulable pod ${name} timeout period exceeded` };
  if (spent >= catchAll) return { unschedulable, timedOut: `pending pod ${name} timeout period exceeded` };
  const left = Math.min(unschedulable ? unschedulableTimeout - spent : catchAll, catchAll - spent);
  return { unschedulable, recheckMs: Math.max(1, left) * 1000 };
}
