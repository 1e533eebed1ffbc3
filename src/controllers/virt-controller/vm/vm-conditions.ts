/**
 * The VM's conditions as upstream's VM controller sets them: Ready from the VMI (or why
 * there is none), the VMI's other conditions mirrored, Failure from the last sync error,
 * RestartRequired (with why) while the running VMI predates a template change it cannot take live.
 */
import type { VirtualMachineCondition, VirtualMachineInstance } from '../../../api/generated/types';
import { removeCondition, setCondition } from '../vmi/status';

/** A failure of the last sync, surfaced as the Failure condition. */
export interface SyncFailure {
  reason: string;
  message: string;
}

/** The VM's next conditions from its current ones. */
export function vmConditions(
  current: VirtualMachineCondition[],
  vmi: VirtualMachineInstance | undefined,
  syncError: SyncFailure | undefined,
  /** Why the VMI needs a restart for the template to apply, or undefined. */
  restartRequired: string | undefined,
  now: string,
): VirtualMachineCondition[] {
  // Conditions: Ready from the VMI, the VMI's other conditions mirrored, Failure, RestartRequired.
  let conds = current;
  const vmiReady = vmi?.status?.conditions?.find((c) => c.type === 'Ready');
  const ready: VirtualMachineCondition = !vmi
    ? { type: 'Ready', status: 'False', reason: 'VMINotExists', message: 'VMI does not exist' }
    : vmiReady
      ? { type: 'Ready', status: vmiReady.status, reason: vmiReady.reason, message: vmiReady.message }
      : {
          type: 'Ready',
          status: 'False',
          reason: 'VMIConditionMissing',
          message: 'VMI is missing the Ready condition',
        };
  if (ready.reason === undefined) delete ready.reason;
  if (ready.message === undefined) delete ready.message;
  conds = setCondition(conds, ready, now);
  const ignore = new Set(['Ready', 'Failure', 'RestartRequired']);
  if (vmi) {
    const seen = new Set<string>();
    for (const c of vmi.status?.conditions ?? []) {
      if (ignore.has(c.type)) continue;
      seen.add(c.type);
      conds = setCondition(
        conds,
        { type: c.type, status: c.status, reason: c.reason, message: c.message },
        now,
      );
    }
    conds = conds.filter((c) => ignore.has(c.type) || seen.has(c.type));
  }
  conds = syncError
    ? setCondition(
        conds,
        { type: 'Failure', status: 'True', reason: syncError.reason, message: syncError.message },
        now,
      )
    : removeCondition(conds, 'Failure');
  conds = restartRequired
    ? setCondition(
        conds,
        {
          type: 'RestartRequired',
          status: 'True',
          reason: 'RestartRequired',
          message: restartRequired,
        },
        now,
      )
    : vmi
      ? conds
      : removeCondition(conds, 'RestartRequired');
  return conds;
}
