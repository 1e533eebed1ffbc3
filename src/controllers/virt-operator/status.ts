/**
 * The KubeVirt CR's status as upstream's virt-operator reports it: `phase` (Deploying,
 * Deployed, Deleting, Deleted), conditions Available / Progressing / Degraded with
 * upstream's reasons, observed and target version and registry, observedGeneration.
 * Pure: the operator computes the status from what it saw and writes it when it differs.
 */
import type { KubeVirtCondition, KubeVirtStatus } from '../../api/generated/types';

export const REASON = {
  deploying: 'DeploymentInProgress',
  created: 'AllResourcesCreated',
  ready: 'AllComponentsReady',
  updating: 'UpdateInProgress',
  failed: 'DeploymentFailed',
  existing: 'ExistingDeployment',
  deletionFailed: 'DeletionFailed',
  deleting: 'DeletionInProgress',
  invalid: 'InvalidConfiguration',
} as const;

/** What the operator found in one pass. */
export type Observation =
  | {
      kind: 'deploying';
      version: string;
      registry: string;
      generation: number;
      notReady: string[];
      updating: boolean;
    }
  | { kind: 'deployed'; version: string; registry: string; generation: number }
  | {
      kind: 'failed';
      reason: string;
      message: string;
      generation: number;
      version?: string;
      registry?: string;
    }
  | { kind: 'deleting'; blocked?: string }
  | { kind: 'deleted' };

type Cond = Pick<KubeVirtCondition, 'type' | 'status' | 'reason' | 'message'>;

function conds(
  available: boolean,
  progressing: boolean,
  degraded: boolean,
  reason: string,
  message: string,
): Cond[] {
  const s = (b: boolean) => (b ? 'True' : 'False');
  return [
    { type: 'Available', status: s(available), reason, message },
    { type: 'Progressing', status: s(progressing), reason, message },
    { type: 'Degraded', status: s(degraded), reason, message },
  ];
}

/**
 * The status for an observation, keeping each condition's transition time when its
 * status did not change and what the previous status recorded that this pass did not learn.
 */
export function nextStatus(prev: KubeVirtStatus | undefined, o: Observation, now: Date): KubeVirtStatus {
  const s: KubeVirtStatus = { ...prev };
  let c: Cond[];
  switch (o.kind) {
    case 'deploying':
      s.phase = 'Deploying';
      s.targetKubeVirtVersion = o.version;
      s.targetKubeVirtRegistry = o.registry;
      s.observedGeneration = o.generation;
      c = conds(
        false,
        true,
        false,
        o.updating ? REASON.updating : REASON.deploying,
        o.notReady.length ? `Waiting for ${o.notReady.join(', ')}` : 'Deploying version',
      );
      break;
    case 'deployed':
      s.phase = 'Deployed';
      s.targetKubeVirtVersion = o.version;
      s.targetKubeVirtRegistry = o.registry;
      s.observedKubeVirtVersion = o.version;
      s.observedKubeVirtRegistry = o.registry;
      s.observedGeneration = o.generation;
      c = conds(true, false, false, REASON.ready, 'All components are ready.');
      break;
    case 'failed':
      s.observedGeneration = o.generation;
      if (o.version) s.targetKubeVirtVersion = o.version;
      if (o.registry) s.targetKubeVirtRegistry = o.registry;
      // A failed update leaves the old version serving: Available stays as it was.
      c = conds(
        prev?.phase === 'Deployed' || prev?.observedKubeVirtVersion !== undefined,
        false,
        true,
        o.reason,
        o.message,
      );
      if (o.reason === REASON.existing) s.phase = '';
      break;
    case 'deleting':
      s.phase = 'Deleting';
      c = o.blocked
        ? conds(false, false, true, REASON.deletionFailed, o.blocked)
        : conds(false, true, false, REASON.deleting, 'Removing the installed objects');
      break;
    case 'deleted':
      s.phase = 'Deleted';
      c = conds(false, false, false, REASON.deleting, 'Everything installed was removed');
      break;
  }
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  s.conditions = c.map((x) => {
    const old = prev?.conditions?.find((p) => p.type === x.type);
    const same = old && old.status === x.status && old.reason === x.reason && old.message === x.message;
    const transitioned = old && old.status === x.status ? old.lastTransitionTime : stamp;
    return {
      ...x,
      lastProbeTime: same ? old.lastProbeTime : stamp,
      lastTransitionTime: transitioned ?? stamp,
    };
  });
  return s;
}
