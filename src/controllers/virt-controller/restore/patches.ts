/** `spec.patches` of a restore to a new VM: JSON patch operations, one per string. */
import type { VirtualMachine } from '../../../api/generated/types';
import { jsonPatch } from '../../runtime/patch';
import type { JsonPatchOp } from '../../runtime/types';

/** A restore's own error (reported in its conditions, retried). */
export class RestoreError extends Error {}

/** `spec.patches`: JSON patch operations, one per string, applied to a new VM. */
export function applyPatches(vm: VirtualMachine, patches: string[]): VirtualMachine {
  if (!patches.length) return vm;
  const ops = patches.map((p, i) => {
    try {
      return JSON.parse(p) as JsonPatchOp;
    } catch (e) {
      throw new RestoreError(`spec.patches[${i}]: not a JSON patch operation: ${(e as Error).message}`);
    }
  });
  try {
    return jsonPatch(vm as never, ops) as unknown as VirtualMachine;
  } catch (e) {
    throw new RestoreError(`error patching VM ${vm.metadata?.name}: ${(e as Error).message}`);
  }
}
