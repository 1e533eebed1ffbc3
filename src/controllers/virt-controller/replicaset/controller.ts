/**
 * The VirtualMachineInstanceReplicaSet controller (upstream
 * pkg/virt-controller/watch/replicaset): keeps `spec.replicas` VMIs matching the selector
 * alive, created from the template and owned by the ReplicaSet; removes finished VMIs;
 * scales down unready VMIs first; reports replicas, readyReplicas, labelSelector and a
 * ReplicaFailure condition; honours `spec.paused`.
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import { defaultVirtualMachineInstance } from '../../../api/defaults/vmi-defaults';
import { FieldPath } from '../../../api/errors';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceReplicaSet,
  VirtualMachineInstanceReplicaSetStatus,
} from '../../../api/generated/types';
import { validateVirtualMachineInstanceSpec } from '../../../api/validation/vmi-spec';
import {
  type ControllerDeps,
  type Expectations,
  type KeyReconciler,
  type Lister,
  type ReconcileResult,
  timestamp,
} from '../../common/controller-ports';
import { controllerRef } from '../../common/owner-ref';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, NotFoundError } from '../../runtime/errors';
import { VirtualMachineInstanceReplicaSetType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import { formatLabelSelector, type LabelSelectorSpec, parseLabelSelector } from '../../runtime/selectors';
import type { KubeObject } from '../../runtime/types';
import { deleteOwned } from '../services/delete-owned';
import { isFinalPhase, removeCondition, setCondition } from '../vmi/status';

/** Event reasons of the ReplicaSet controller (upstream values). */
export const ReplicaSetEventReason = {
  SuccessfulCreate: 'SuccessfulCreate',
  FailedCreate: 'FailedCreate',
  SuccessfulDelete: 'SuccessfulDelete',
  FailedDelete: 'FailedDelete',
  SuccessfulPaused: 'SuccessfulPaused',
  SuccessfulResumed: 'SuccessfulResumed',
} as const;

/** Upstream's cap on creations or deletions per sync. */
export const BURST_REPLICAS = 250;

export interface ReplicaSetControllerDeps extends ControllerDeps {
  replicaSets: Lister<VirtualMachineInstanceReplicaSet>;
  vmis: Lister<VirtualMachineInstance>;
  expectations: Expectations;
  config: () => ClusterConfig;
  onWrite?: (
    kind: 'VirtualMachineInstance' | 'VirtualMachineInstanceReplicaSet',
    verb: 'create' | 'update' | 'delete',
  ) => void;
}

function ownedBy(vmi: VirtualMachineInstance, uid: string | undefined): boolean {
  return (vmi.metadata?.ownerReferences ?? []).some((r) => r.controller && r.uid === uid);
}

function isReady(vmi: VirtualMachineInstance): boolean {
  return (
    vmi.status?.phase === 'Running' &&
    (vmi.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

/** Scale-down order: not yet scheduled, then scheduled, then unready, then newest first. */
function deletionRank(vmi: VirtualMachineInstance): number {
  const phase = vmi.status?.phase ?? '';
  if (phase === '' || phase === 'Pending') return 0;
  if (phase === 'Scheduling') return 1;
  if (phase === 'Scheduled') return 2;
  return isReady(vmi) ? 4 : 3;
}

/**
 * Reconciles one VirtualMachineInstanceReplicaSet (`namespace/name` key): creates and
 * deletes owned VMIs to reach `spec.replicas` and writes the ReplicaSet's status.
 */
export class ReplicaSetController implements KeyReconciler {
  constructor(private readonly d: ReplicaSetControllerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const rs = this.d.replicaSets.get(key);
    if (!rs) {
      this.d.expectations.delete(key);
      return undefined;
    }
    const ns = rs.metadata?.namespace;
    let selectorText: string;
    try {
      selectorText = formatLabelSelector((rs.spec.selector ?? {}) as LabelSelectorSpec);
    } catch (err) {
      await this.writeStatus(
        rs,
        this.status(rs, [], { reason: 'FailedCreate', message: `spec.selector: ${(err as Error).message}` }),
      );
      return undefined;
    }
    const selector = parseLabelSelector(selectorText);
    const vmis = this.d.vmis
      .list(ns)
      .filter((v) => ownedBy(v, rs.metadata?.uid) && selector.matches(v.metadata?.labels));

    let failure: { reason: string; message: string } | undefined;
    if (this.d.expectations.satisfied(key) && !rs.metadata?.deletionTimestamp) {
      try {
        await this.scale(key, rs, vmis);
      } catch (err) {
        failure = { reason: ReplicaSetEventReason.FailedCreate, message: (err as Error).message };
      }
    }
    await this.writeStatus(rs, this.status(rs, vmis, failure));
    return failure ? { requeueAfterMs: 5000 } : undefined;
  }

  private async scale(
    key: string,
    rs: VirtualMachineInstanceReplicaSet,
    vmis: VirtualMachineInstance[],
  ): Promise<void> {
    const finished = vmis.filter((v) => isFinalPhase(v.status?.phase) && !v.metadata?.deletionTimestamp);
    const active = vmis.filter((v) => !isFinalPhase(v.status?.phase) && !v.metadata?.deletionTimestamp);
    if (finished.length) await this.deleteVmis(key, rs, finished);
    if (rs.spec.paused) return;
    const diff = active.length - (rs.spec.replicas ?? 1);
    if (diff < 0) {
      const n = Math.min(-diff, BURST_REPLICAS);
      const template = this.buildVmi(rs);
      this.d.expectations.expectCreations(key, n);
      const results = await Promise.allSettled(
        Array.from({ length: n }, () => this.d.client.create<KubeObject>(VmiResource, template as never)),
      );
      let firstError: Error | undefined;
      for (const r of results) {
        if (r.status === 'fulfilled') {
          this.d.onWrite?.('VirtualMachineInstance', 'create');
          this.d.recorder.event(
            rs,
            'Normal',
            ReplicaSetEventReason.SuccessfulCreate,
            `Created virtual machine instance: ${r.value.metadata?.name}`,
          );
        } else {
          this.d.expectations.creationObserved(key);
          firstError ??= r.reason as Error;
          this.d.recorder.event(
            rs,
            'Warning',
            ReplicaSetEventReason.FailedCreate,
            `Error creating VMI: ${(r.reason as Error).message}`,
          );
        }
      }
      if (firstError) throw firstError;
    } else if (diff > 0) {
      const victims = [...active]
        .sort(
          (a, b) =>
            deletionRank(a) - deletionRank(b) ||
            String(b.metadata?.creationTimestamp ?? '').localeCompare(
              String(a.metadata?.creationTimestamp ?? ''),
            ),
        )
        .slice(0, Math.min(diff, BURST_REPLICAS));
      await this.deleteVmis(key, rs, victims);
    }
  }

  private deleteVmis(
    key: string,
    rs: VirtualMachineInstanceReplicaSet,
    vmis: VirtualMachineInstance[],
  ): Promise<void> {
    return deleteOwned(this.d, {
      key,
      owner: rs,
      resource: VmiResource,
      victims: vmis as Array<VirtualMachineInstance & KubeObject>,
      deleted: (v) => `Deleted virtual machine instance: ${v.metadata?.uid}`,
      failed: (v, err) => `Error deleting VMI ${v.metadata?.name}: ${err.message}`,
      onDeleted: () => this.d.onWrite?.('VirtualMachineInstance', 'delete'),
    });
  }

  /** A VMI from the template: generateName from the ReplicaSet, owned by it, defaulted and validated. */
  buildVmi(rs: VirtualMachineInstanceReplicaSet): VirtualMachineInstance {
    const t = rs.spec.template;
    const raw: VirtualMachineInstance = {
      apiVersion: 'kubevirt.io/v1',
      metadata: {
        generateName: rs.metadata?.name,
        namespace: rs.metadata?.namespace,
        labels: { ...(t.metadata?.labels ?? {}) },
        annotations: { ...(t.metadata?.annotations ?? {}) },
        ownerReferences: [controllerRef('kubevirt.io/v1', 'VirtualMachineInstanceReplicaSet', rs)],
      },
      spec: structuredClone(t.spec ?? { domain: { devices: {} } }) as VirtualMachineInstance['spec'],
    };
    const config = this.d.config();
    const vmi = defaultVirtualMachineInstance(raw, config);
    // Every replica shares the template; a firmware UUID derived from the prefix would repeat.
    if (vmi.spec.domain.firmware && !t.spec?.domain?.firmware?.uuid) delete vmi.spec.domain.firmware.uuid;
    const errors = validateVirtualMachineInstanceSpec(
      FieldPath.of('spec', 'template', 'spec'),
      vmi.spec,
      config,
    );
    if (errors.length) throw new Error(errors.map((e) => `${e.path}: ${e.message}`).join('; '));
    return vmi;
  }

  private status(
    rs: VirtualMachineInstanceReplicaSet,
    vmis: VirtualMachineInstance[],
    failure?: { reason: string; message: string },
  ): VirtualMachineInstanceReplicaSetStatus {
    const now = timestamp(this.d.now?.() ?? new Date());
    const status: VirtualMachineInstanceReplicaSetStatus = structuredClone(rs.status ?? {});
    const live = vmis.filter((v) => !isFinalPhase(v.status?.phase) && !v.metadata?.deletionTimestamp);
    status.replicas = live.length;
    status.readyReplicas = live.filter(isReady).length;
    try {
      status.labelSelector = formatLabelSelector((rs.spec.selector ?? {}) as LabelSelectorSpec);
    } catch {
      delete status.labelSelector;
    }
    let conds = (status.conditions ?? []) as Array<{
      type: string;
      status: string;
      reason?: string;
      message?: string;
    }>;
    conds = failure
      ? setCondition(
          conds as never,
          { type: 'ReplicaFailure', status: 'True', reason: failure.reason, message: failure.message },
          now,
        )
      : removeCondition(conds as never, 'ReplicaFailure');
    conds = rs.spec.paused
      ? setCondition(
          conds as never,
          { type: 'ReplicaPaused', status: 'True', reason: 'Paused', message: 'Controller got paused' },
          now,
        )
      : removeCondition(conds as never, 'ReplicaPaused');
    if (conds.length) status.conditions = conds as never;
    else delete status.conditions;
    return status;
  }

  private async writeStatus(
    rs: VirtualMachineInstanceReplicaSet,
    status: VirtualMachineInstanceReplicaSetStatus,
  ): Promise<void> {
    if (sameJson(rs.status ?? {}, status)) return;
    try {
      await this.d.client.updateStatus(VirtualMachineInstanceReplicaSetType, { ...rs, status } as never);
      this.d.onWrite?.('VirtualMachineInstanceReplicaSet', 'update');
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      throw err;
    }
  }
}
