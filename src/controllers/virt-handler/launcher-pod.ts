/** Which of a VMI's launcher pods on this node is the one that runs (or ran) its guest, and whether it is down. */
import type { VirtualMachineInstance } from '../../api/generated/types';
import { MigrationLabels } from '../common/migration-labels';
import type { Pod } from '../common/pod';

/**
 * The VMI's launcher pod among `pods` (the pods it created on this node): the target pod a
 * migration handed the VMI over to, else a running pod before a finished one, newest
 * first; never the target of the migration in flight (a pod that came with an earlier
 * migration is the VMI's own).
 */
export function launcherPodOf(pods: Pod[], vmi: VirtualMachineInstance, nodeName: string): Pod | undefined {
  const ms = vmi.status?.migrationState;
  const adopted =
    ms?.completed && !ms.failed && vmi.status?.nodeName === nodeName
      ? pods.find((p) => p.metadata?.name === ms.targetPod)
      : undefined;
  if (adopted) return adopted;
  const live = (p: Pod) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
  return pods
    .filter((p) => {
      const job = p.metadata?.labels?.[MigrationLabels.jobUid];
      return !job || job !== ms?.migrationUid;
    })
    .sort(
      (a, b) =>
        Number(live(b)) - Number(live(a)) ||
        String(b.metadata?.creationTimestamp ?? '').localeCompare(
          String(a.metadata?.creationTimestamp ?? ''),
        ),
    )[0];
}

/** Whether the launcher pod is gone, finished, or its compute container ended. */
export function launcherPodDown(pod: Pod | undefined): boolean {
  return (
    !pod ||
    pod.status?.phase === 'Succeeded' ||
    pod.status?.phase === 'Failed' ||
    (pod.status?.containerStatuses ?? []).some((c) => c.name === 'compute' && c.state?.terminated)
  );
}
