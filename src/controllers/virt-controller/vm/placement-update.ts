/**
 * Node selector, affinity and tolerations under the LiveUpdate rollout strategy
 * (upstream's handleAffinityChangeRequest, handleTolerationsChangeRequest,
 * VMNodeSelectorPatch, VMIAffinityPatch and vmiTolerationsPatch in
 * pkg/virt-controller/watch/vm): a change in the template is patched onto the running
 * VMI, without RestartRequired. As upstream, the running launcher pod is left where it is
 * (the scheduler does not move a bound pod); the VMI carries the new values, which the
 * next launcher pod is rendered from: a migration's target pod or the next start.
 * A change while the VMI migrates waits (a sync error, retried) with upstream's reasons.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { isMigrating } from '../../common/vmi-migrating';
import { sameJson } from '../../runtime/same-json';
import type { JsonPatchOp } from '../../runtime/types';

/** The VMI spec fields a live update carries onto the running VMI, in upstream's order. */
const FIELDS = ['affinity', 'nodeSelector', 'tolerations'] as const;
type Field = (typeof FIELDS)[number];

/** What a change of the template's placement means for the running VMI. */
export interface PlacementChange {
  /** It cannot be applied yet (and is looked at again): upstream's reason and message. */
  wait?: { reason: string; message: string };
  /** The JSON patch that applies it to the VMI. */
  patch?: JsonPatchOp[];
}

/** One field's ops, as upstream's patches: add when the VMI has none, test and replace, or remove. */
function fieldOps(field: Field, want: unknown, have: unknown): JsonPatchOp[] {
  const path = `/spec/${field}`;
  if (want === undefined)
    return [
      { op: 'test', path, value: have },
      { op: 'remove', path },
    ];
  if (have === undefined) return [{ op: 'add', path, value: want }];
  return [
    { op: 'test', path, value: have },
    { op: 'replace', path, value: want },
  ];
}

/**
 * The placement part of bringing the running `vmi` to `wanted` (the VMI the template
 * would start now, with its instance type applied): nothing when the three fields match,
 * a wait while the VMI migrates, else the patch of what differs.
 */
export function placementChange(
  wanted: VirtualMachineInstance,
  vmi: VirtualMachineInstance,
): PlacementChange {
  const changed = FIELDS.filter((f) => !sameJson(wanted.spec[f], vmi.spec[f]));
  if (changed.length === 0) return {};
  if (isMigrating(vmi)) {
    // upstream checks affinity and node selector first, with their own reason.
    return changed.includes('tolerations') && changed.length === 1
      ? {
          wait: {
            reason: 'TolerationsChangeError',
            message:
              'Error encountered while handling tolerations change request: tolerations should not be changed during VMI migration',
          },
        }
      : {
          wait: {
            reason: 'AffinityChangeError',
            message:
              'Error encountered while handling node affinity change request: Node affinity should not be changed during VMI migration',
          },
        };
  }
  return { patch: changed.flatMap((f) => fieldOps(f, wanted.spec[f], vmi.spec[f])) };
}

/**
 * `wanted` with the placement fields taken from the running VMI, for the comparison that
 * decides a restart (upstream copies them from the current VM into the last-seen one).
 */
export function withoutLivePlacement(
  wanted: VirtualMachineInstance,
  vmi: VirtualMachineInstance,
): VirtualMachineInstance {
  const spec = { ...wanted.spec };
  for (const f of FIELDS) {
    if (vmi.spec[f] === undefined) delete spec[f];
    else (spec as Record<string, unknown>)[f] = vmi.spec[f];
  }
  return { ...wanted, spec };
}
