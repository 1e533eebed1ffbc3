/**
 * Pure predicates over a VirtualMachineSnapshot and its content, as upstream's
 * snapshot.go helpers: phases, the failure deadline, the deletion policy, names.
 */
import type { VirtualMachineSnapshot, VirtualMachineSnapshotContent } from '../../../api/generated/types';
import { parseGoDuration } from '../../common/go-duration';

/** Finalizers (upstream values). */
export const SNAPSHOT_FINALIZER = 'snapshot.kubevirt.io/vmsnapshot-protection';
export const CONTENT_FINALIZER = 'snapshot.kubevirt.io/vmsnapshotcontent-protection';
/** Labels on the VolumeSnapshots. */
export const SOURCE_NAME_LABEL = 'snapshot.kubevirt.io/source-vm-name';
export const SOURCE_NAMESPACE_LABEL = 'snapshot.kubevirt.io/source-vm-namespace';
/** upstream's DefaultFailureDeadline. */
export const DEFAULT_FAILURE_DEADLINE_MS = 5 * 60_000;
export const DEADLINE_EXCEEDED = 'snapshot deadline exceeded';

export const Phase = {
  InProgress: 'InProgress',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Deleting: 'Deleting',
} as const;

export const isReady = (s: VirtualMachineSnapshot) => s.status?.readyToUse === true;
export const isFailed = (s: VirtualMachineSnapshot | undefined) => s?.status?.phase === Phase.Failed;
export const isSucceeded = (s: VirtualMachineSnapshot) => s.status?.phase === Phase.Succeeded;
export const isProgressing = (s: VirtualMachineSnapshot) => !isFailed(s) && !isSucceeded(s);
export const isDeleting = (s: VirtualMachineSnapshot | undefined) =>
  s?.metadata?.deletionTimestamp !== undefined;

export const contentCreated = (c: VirtualMachineSnapshotContent) => c.status?.creationTime !== undefined;
export const contentReady = (c: VirtualMachineSnapshotContent) => c.status?.readyToUse === true;

/** `spec.failureDeadline` in ms (0: none), the default when unset. */
export function failureDeadlineMs(s: VirtualMachineSnapshot): number {
  const d = s.spec.failureDeadline;
  if (d === undefined || d === null) return DEFAULT_FAILURE_DEADLINE_MS;
  return parseGoDuration(d, 'spec.failureDeadline');
}

/** Milliseconds left before the deadline (0 when there is none). */
export function timeUntilDeadline(s: VirtualMachineSnapshot, now: Date): number {
  const ms = failureDeadlineMs(s);
  if (ms === 0) return 0;
  const created = Date.parse(String(s.metadata?.creationTimestamp ?? '')) || now.getTime();
  return created + ms - now.getTime();
}

/** Failed, or still in progress past its deadline. */
export function deadlineExceeded(s: VirtualMachineSnapshot, now: Date): boolean {
  if (isFailed(s)) return true;
  if (!isProgressing(s)) return false;
  return failureDeadlineMs(s) !== 0 && timeUntilDeadline(s, now) < 0;
}

export const isTerminating = (s: VirtualMachineSnapshot, now: Date) =>
  isDeleting(s) || deadlineExceeded(s, now);

/** deletionPolicy Delete (the default): the content goes with the snapshot. */
export const deleteContentPolicy = (s: VirtualMachineSnapshot) =>
  s.spec.deletionPolicy === undefined || s.spec.deletionPolicy === 'Delete';

export const shouldDeleteContent = (s: VirtualMachineSnapshot, c: VirtualMachineSnapshotContent) =>
  deleteContentPolicy(s) || !contentReady(c);

/** The content's name: the one in status, else `vmsnapshot-content-<uid>`. */
export function contentName(s: VirtualMachineSnapshot): string {
  return s.status?.virtualMachineSnapshotContentName ?? `vmsnapshot-content-${s.metadata?.uid}`;
}

/** The VolumeSnapshot of one volume. */
export function volumeSnapshotName(s: VirtualMachineSnapshot, volumeName: string): string {
  return `vmsnapshot-${s.metadata?.uid}-volume-${volumeName}`;
}

/** The source may be unlocked: done, or terminating with its content gone where it must go. */
export function canUnlockSource(
  s: VirtualMachineSnapshot,
  c: VirtualMachineSnapshotContent | undefined,
  now: Date,
): boolean {
  return !isProgressing(s) || (isTerminating(s, now) && (c === undefined || !shouldDeleteContent(s, c)));
}
