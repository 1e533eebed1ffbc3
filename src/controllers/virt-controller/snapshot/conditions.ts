/**
 * The Ready / Progressing / Failure conditions and the source indications of
 * snapshot.kubevirt.io objects, as upstream's pkg/storage/snapshot/util.go writes them: a
 * condition's transition time changes only when its status or reason does.
 */
import type { V1beta1Condition } from '../../../api/generated/types';

export const ConditionType = { Ready: 'Ready', Progressing: 'Progressing', Failure: 'Failure' } as const;

/** A condition of `type` with `status` and `reason`, transitioned at `now`. */
export function condition(type: string, status: boolean, reason: string, now: string): V1beta1Condition {
  return { type, status: status ? 'True' : 'False', reason, lastTransitionTime: now };
}

/** `conditions` with `c` in place of the one of its type (kept as is when nothing changed). */
export function updateCondition(
  conditions: V1beta1Condition[] | undefined,
  c: V1beta1Condition,
): V1beta1Condition[] {
  const out = [...(conditions ?? [])];
  const i = out.findIndex((x) => x.type === c.type);
  if (i < 0) out.push(c);
  else if (out[i]!.status !== c.status || out[i]!.reason !== c.reason) out[i] = c;
  return out;
}

/** Whether a condition of `type` is present (any status). */
export function hasCondition(conditions: V1beta1Condition[] | undefined, type: string): boolean {
  return (conditions ?? []).some((c) => c.type === type);
}

/** Source indications (upstream's snapshotv1.Indication values). */
export const Indication = {
  Online: 'Online',
  GuestAgent: 'GuestAgent',
  NoGuestAgent: 'NoGuestAgent',
  QuiesceTimeout: 'QuiesceTimeout',
  Paused: 'Paused',
  PartialSnapshot: 'PartialSnapshot',
} as const;

/** upstream's snapshotIndicationMessages. */
export const IndicationMessages: Readonly<Record<string, string>> = {
  Online: 'Snapshot taken while the VM was running. Consistency depends on guest-agent quiescing.',
  GuestAgent: 'Guest agent was active and attempted to quiesce the filesystem for application consistency.',
  NoGuestAgent:
    'Guest agent was not available. Snapshot is crash-consistent and may not be application-consistent.',
  QuiesceTimeout:
    'Guest agent quiesced the filesystem, but the freeze window timed out before completion. Snapshot is crash-consistent and may not be application-consistent.',
  Paused:
    'Snapshot taken while the VM was paused. Snapshot is crash-consistent and may not be application-consistent.',
  PartialSnapshot:
    'Not all snapshotable volumes were included in the snapshot. Check status.snapshotVolumes for excluded volumes and VM VolumeSnapshotStatus for details.',
};

/** The message of the guest agent's freeze limit (upstream's VSSFreezeLimitReached). */
export const FREEZE_LIMIT_REACHED = 'frozen state limit reached';
