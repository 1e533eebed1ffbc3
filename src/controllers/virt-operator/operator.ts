/**
 * virt-operator: the KubeVirt CR controller on the runtime's Manager, with leader
 * election on the `virt-operator` Lease (of the Deployment's replicas only the holder
 * reconciles). Changes to the installed Deployments, DaemonSets, Services, Secrets and
 * ConfigMaps, webhook configurations and the APIService (a deleted Deployment or webhook
 * configuration, a changed Secret) enqueue the CRs, so drift is repaired at once; the
 * other cluster-scoped objects (CRDs, RBAC) are compared on the periodic resync and at
 * each certificate renewal.
 */
import { Manager } from '../runtime/manager';
import { ConfigMapType, KubeVirtType, SecretType, ServiceType } from '../runtime/resources';
import type { KubeObject } from '../runtime/types';
import { MANAGED_BY, MANAGED_BY_LABEL } from './bookkeeping';
import { type OperatorContext, reconcileKubeVirt } from './reconcile';
import {
  APIServiceType,
  DaemonSetType,
  DeploymentType,
  MutatingWebhookConfigurationType,
  ValidatingWebhookConfigurationType,
} from './resource-types';

/** Options of {@link VirtOperator}. */
export interface VirtOperatorOptions extends OperatorContext {
  /** Leader election on a Lease in the namespace (default on, as upstream). */
  leaderElection?:
    | boolean
    | { identity?: string; leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
  onError?: (name: string, err: Error) => void;
  onLostLeadership?: () => void;
}

/** The operator. */
export class VirtOperator {
  readonly manager: Manager;

  constructor(o: VirtOperatorOptions) {
    const le = o.leaderElection ?? true;
    this.manager = new Manager({
      client: o.client,
      namespace: o.namespace,
      leaderElection: le
        ? { name: 'virt-operator', namespace: o.namespace, ...(typeof le === 'object' ? le : {}) }
        : undefined,
      onLostLeadership: o.onLostLeadership,
    });
    let crs: () => KubeObject[] = () => [];
    const toCrs = (obj: KubeObject) =>
      obj.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY
        ? crs().map((k) => ({ namespace: k.metadata?.namespace, name: k.metadata!.name! }))
        : [];
    const ctrl = this.manager.addController({
      name: 'virt-operator',
      forType: KubeVirtType,
      reconciler: { reconcile: async (req) => reconcileKubeVirt(o, req.name) },
      watches: [
        DeploymentType,
        DaemonSetType,
        ServiceType,
        SecretType,
        ConfigMapType,
        // Without them nothing admits or serves kubevirt.io: repaired at once, not at the resync.
        MutatingWebhookConfigurationType,
        ValidatingWebhookConfigurationType,
        APIServiceType,
      ].map((type) => ({
        type,
        map: toCrs,
      })),
      onError: (req, err) =>
        (o.onError ?? ((n, e) => console.error(`virt-operator: KubeVirt ${n}: ${e.message}`)))(req.name, err),
    });
    crs = () => ctrl.informer.indexer.list();
  }

  /** Starts informers; with leader election, reconciles once the Lease is won. */
  start(): Promise<void> {
    return this.manager.start();
  }

  stop(): Promise<void> {
    return this.manager.stop();
  }
}
