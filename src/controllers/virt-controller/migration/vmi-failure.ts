/**
 * upstream's handleMarkMigrationFailedOnVMI: a migration that failed before a handler
 * started it (its target pod went down during PreparingTarget, a timeout, ...) is marked
 * failed and completed in the VMI's `status.migrationState`, where the node agents would
 * otherwise have written it. Without the mark the VMI keeps an unfinished migration state
 * that no agent will finish, and every later migration of it waits behind it.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type { ControllerDeps } from '../../common/controller-ports';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, InvalidError, NotFoundError } from '../../runtime/errors';
import type { JsonPatchOp } from '../../runtime/types';

/** upstream's failure reason when the controller, not a handler, ends the migration. */
export const TARGET_POD_DOWN = 'Target pod is down';

/**
 * The JSON patch marking `m` failed on `vmi` (a test on `migrationUid`, so a newer
 * migration's state is never touched, then field-level adds), or undefined when the VMI's
 * migration state is not `m`'s, already ended, or the VMI itself is over.
 */
export function markMigrationFailedOnVmi(
  m: VirtualMachineInstanceMigration,
  vmi: VirtualMachineInstance | undefined,
  now: string,
): JsonPatchOp[] | undefined {
  const ms = vmi?.status?.migrationState;
  if (!ms?.migrationUid || ms.migrationUid !== m.metadata?.uid) return undefined;
  if (ms.failed || ms.completed) return undefined;
  if (
    vmi?.metadata?.deletionTimestamp ||
    vmi?.status?.phase === 'Succeeded' ||
    vmi?.status?.phase === 'Failed'
  )
    return undefined;
  const base = '/status/migrationState';
  const ops: JsonPatchOp[] = [
    { op: 'test', path: `${base}/migrationUid`, value: ms.migrationUid },
    { op: 'add', path: `${base}/failed`, value: true },
    { op: 'add', path: `${base}/completed`, value: true },
  ];
  if (!ms.endTimestamp) ops.push({ op: 'add', path: `${base}/endTimestamp`, value: now });
  if (!ms.startTimestamp) ops.push({ op: 'add', path: `${base}/startTimestamp`, value: now });
  if (!ms.failureReason) ops.push({ op: 'add', path: `${base}/failureReason`, value: TARGET_POD_DOWN });
  return ops;
}

/** Applies {@link markMigrationFailedOnVmi} with a `FailedMigration` Warning on the VMI; a lost race is no error. */
export async function markFailedOnVmi(
  d: Pick<ControllerDeps, 'client' | 'recorder'> & { onWrite?: (kind: string, verb: 'update') => void },
  m: VirtualMachineInstanceMigration,
  vmi: VirtualMachineInstance | undefined,
  now: string,
): Promise<void> {
  const ops = markMigrationFailedOnVmi(m, vmi, now);
  if (!ops || !vmi) return;
  try {
    await d.client.patch(VmiResource, vmi.metadata?.name ?? '', ops, {
      namespace: vmi.metadata?.namespace,
      type: 'json',
    });
  } catch (err) {
    // A newer migration's state (the test op failed) or no VMI: nothing of ours to mark.
    if (err instanceof ConflictError || err instanceof NotFoundError || err instanceof InvalidError) return;
    throw err;
  }
  d.onWrite?.('VirtualMachineInstance', 'update');
  const reason = vmi.status?.migrationState?.failureReason || TARGET_POD_DOWN;
  d.recorder.event(
    vmi,
    'Warning',
    'FailedMigration',
    `VirtualMachineInstance migration uid ${m.metadata?.uid} failed. reason:${reason}`,
  );
}
