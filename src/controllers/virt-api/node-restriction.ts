/**
 * Upstream's node restriction (the NodeRestriction feature gate, beta, on by default):
 * a virt-handler may change only the VMIs of its own node. The handler's service-account
 * token is bound to its pod, and the API server puts that pod's node in the user's extra
 * `authentication.kubernetes.io/node-name`; an update from the handler's account is
 * allowed only when that node is the VMI's `status.nodeName` or, during a migration, its
 * `status.migrationState.targetNode`, and the handler may not name a migration target
 * itself (vmi-update-admitter.go). A handler credential without a node name is refused.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import { FeatureGate } from '../../api/config/feature-gates';
import type { FieldError } from '../../api/errors';
import type { AdmissionRequest } from './admission-review';

/** The user extra that names the node a bound service-account token belongs to. */
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

type Vmi = { status?: { nodeName?: string; migrationState?: { targetNode?: string } } };

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/**
 * The node-restriction errors of a VMI update; none unless `fromHandler` says the request
 * is virt-handler's and the gate is on.
 */
export function nodeRestrictionErrors(
  req: AdmissionRequest,
  config: ClusterConfig,
  fromHandler: boolean,
): FieldError[] {
  if (req.operation !== 'UPDATE' || !fromHandler) return [];
  if (!config.isFeatureGateEnabled(FeatureGate.NodeRestriction)) return [];
  const extra = req.userInfo.extra?.[NODE_NAME_EXTRA];
  const node = Array.isArray(extra) ? str(extra[0]) : '';
  if (!node) {
    return [
      {
        path: `userInfo.extra[${NODE_NAME_EXTRA}]`,
        message: 'Node restriction failed, virt-handler service account is missing node name',
        type: 'FieldValueInvalid',
      },
    ];
  }
  const old = (req.oldObject ?? {}) as Vmi;
  const next = (req.object ?? {}) as Vmi;
  const source = str(old.status?.nodeName);
  const target = str(old.status?.migrationState?.targetNode);
  if (node !== source && (target === '' || node !== target)) {
    return [
      {
        path: 'status.nodeName',
        message: `Node restriction, virt-handler is only allowed to modify VMIs it owns (VMI on node ${JSON.stringify(source)}, handler of node ${JSON.stringify(node)})`,
        type: 'FieldValueInvalid',
      },
    ];
  }
  const newTarget = str(next.status?.migrationState?.targetNode);
  if (target === '' && newTarget !== '') {
    return [
      {
        path: 'status.migrationState.targetNode',
        message: 'Node restriction, virt-handler is not allowed to set target node',
        type: 'FieldValueInvalid',
      },
    ];
  }
  return [];
}
