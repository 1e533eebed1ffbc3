/**
 * When an installed workload counts as ready, at the version being deployed: the
 * Deployment or DaemonSet was rendered for that version (its install-strategy-version
 * annotation), its controller has seen its latest generation, every replica runs the
 * latest template, and at least one Deployment replica (every scheduled DaemonSet pod)
 * is ready. One Deployment replica is enough: virt-controller's standbys are not Ready
 * by design (only the Lease holder is).
 */
import type { KubeObject } from '../runtime/types';
import { VERSION_ANNOTATION } from './bookkeeping';

interface WorkloadStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  desiredNumberScheduled?: number;
  updatedNumberScheduled?: number;
  numberReady?: number;
}

/** Why `obj` is not ready at `version`, or undefined when it is. */
export function notReadyReason(obj: KubeObject, version: string): string | undefined {
  const name = `${obj.kind} ${obj.metadata?.name}`;
  if (obj.metadata?.annotations?.[VERSION_ANNOTATION] !== version) return `${name} (not yet at ${version})`;
  const st = (obj.status ?? {}) as WorkloadStatus;
  if ((st.observedGeneration ?? 0) < (obj.metadata?.generation ?? 0)) return `${name} (rollout not observed)`;
  if (obj.kind === 'Deployment') {
    const want = (obj.spec as { replicas?: number }).replicas ?? 1;
    if ((st.updatedReplicas ?? 0) < want) return `${name} (${st.updatedReplicas ?? 0}/${want} updated)`;
    if ((st.readyReplicas ?? 0) < 1) return `${name} (no ready replica)`;
    return undefined;
  }
  const want = st.desiredNumberScheduled ?? 0;
  if ((st.updatedNumberScheduled ?? 0) < want)
    return `${name} (${st.updatedNumberScheduled ?? 0}/${want} updated)`;
  if ((st.numberReady ?? 0) < want) return `${name} (${st.numberReady ?? 0}/${want} ready)`;
  return undefined;
}
