/**
 * The launcher pod's `kubevirt.io/virtual-machine-unpaused` condition, which its readiness
 * gate waits for (upstream's syncPausedConditionToPod): True while the VMI is not paused,
 * False while it is. Without it a kubelet never reports the pod Ready, so the VMI's Ready
 * condition (mirrored from the pod's) could never become True.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import type { Pod, PodCondition } from '../../common/pod';
import type { JsonPatchOp } from '../../runtime/types';
import { UNPAUSED_READINESS_GATE } from '../services/pod-renderer';

/**
 * The JSON patch of the pod's status that sets the condition as the VMI wants it, or
 * undefined when it already is so. It tests the conditions it replaces, as upstream's
 * patch does, so a concurrent change to them fails the patch instead of being lost.
 */
export function unpausedConditionPatch(
  vmi: VirtualMachineInstance,
  pod: Pod,
  now: string,
): JsonPatchOp[] | undefined {
  const paused = (vmi.status?.conditions ?? []).some((c) => c.type === 'Paused' && c.status === 'True');
  const want: PodCondition = paused
    ? {
        type: UNPAUSED_READINESS_GATE,
        status: 'False',
        reason: 'Paused',
        message: 'the virtual machine is paused',
        lastProbeTime: now,
        lastTransitionTime: now,
      }
    : {
        type: UNPAUSED_READINESS_GATE,
        status: 'True',
        reason: 'NotPaused',
        message: 'the virtual machine is not paused',
        lastProbeTime: now,
        lastTransitionTime: now,
      };
  const conditions = pod.status?.conditions ?? [];
  const have = conditions.find((c) => c.type === UNPAUSED_READINESS_GATE);
  if (have?.status === want.status) return undefined;
  const next = [...conditions.filter((c) => c.type !== UNPAUSED_READINESS_GATE), want];
  if (!pod.status) return [{ op: 'add', path: '/status', value: { conditions: next } }];
  if (!pod.status.conditions) return [{ op: 'add', path: '/status/conditions', value: next }];
  return [
    { op: 'test', path: '/status/conditions', value: conditions },
    { op: 'replace', path: '/status/conditions', value: next },
  ];
}
