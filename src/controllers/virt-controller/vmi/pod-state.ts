/**
 * What the VMI controller reads from a launcher pod, as upstream's helpers in
 * pkg/virt-controller/watch/vmi (isPodReady, isPodDownOrGoingDown, image pull errors,
 * unschedulable conditions).
 */
import type { Pod, PodCondition } from '../../common/pod';

/** The pod finished (Succeeded or Failed). */
export function podIsDown(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** The compute container terminated. */
export function computeContainerDown(pod: Pod): boolean {
  return (pod.status?.containerStatuses ?? []).some(
    (c) => c.name === 'compute' && c.state?.terminated !== undefined,
  );
}

/** upstream isPodDownOrGoingDown: finished, compute container terminated, or being deleted. */
export function podDownOrGoingDown(pod: Pod): boolean {
  return podIsDown(pod) || computeContainerDown(pod) || pod.metadata?.deletionTimestamp !== undefined;
}

/**
 * upstream isPodReady: Running, compute container started (not necessarily ready: its
 * readiness probe is the guest's), every other container ready.
 */
export function podReadyForVmi(pod: Pod): boolean {
  if (podDownOrGoingDown(pod)) return false;
  for (const c of pod.status?.containerStatuses ?? []) {
    if (c.name === 'compute') {
      if (c.state?.running === undefined) return false;
    } else if (!c.ready) {
      return false;
    }
  }
  return pod.status?.phase === 'Running';
}

/** The pod's PodScheduled=False condition (unschedulable and why), if any. */
export function unschedulableCondition(pod: Pod): PodCondition | undefined {
  return pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
}

/** An image pull error of any container: `ErrImagePull` or `ImagePullBackOff` with its message. */
export function imagePullError(pod: Pod): { reason: string; message: string } | undefined {
  for (const c of [...(pod.status?.containerStatuses ?? [])]) {
    const w = c.state?.waiting;
    if (w && (w.reason === 'ErrImagePull' || w.reason === 'ImagePullBackOff')) {
      return { reason: w.reason, message: w.message ?? '' };
    }
  }
  return undefined;
}

/** The pod's condition of a type. */
export function podCondition(pod: Pod, type: string): PodCondition | undefined {
  return pod.status?.conditions?.find((c) => c.type === type);
}
