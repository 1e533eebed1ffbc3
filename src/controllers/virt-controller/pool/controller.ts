/**
 * A basic VirtualMachinePool controller (upstream pkg/virt-controller/watch/pool): keeps
 * `spec.replicas` VirtualMachines named `<pool>-<index>` from the VM template, owned by
 * the pool; fills the lowest free index on scale-up and removes unready, then
 * highest-index VMs on scale-down; pushes template changes into existing VMs (their
 * controller then reports RestartRequired); reports replicas, readyReplicas and
 * labelSelector; honours `spec.paused`. Autohealing and proactive update strategies are
 * not implemented.
 */
import type {
  VirtualMachine,
  VirtualMachinePool,
  VirtualMachinePoolStatus,
} from '../../../api/generated/types';
import {
  type ControllerDeps,
  type Expectations,
  type KeyReconciler,
  type Lister,
  type ReconcileResult,
  timestamp,
} from '../../common/controller-ports';
import { controllerRef } from '../../common/owner-ref';
import { ConflictError, NotFoundError } from '../../runtime/errors';
import { VirtualMachinePoolType, VirtualMachineType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import { formatLabelSelector, type LabelSelectorSpec, parseLabelSelector } from '../../runtime/selectors';
import type { KubeObject } from '../../runtime/types';
import { deleteOwned } from '../services/delete-owned';
import { removeCondition, setCondition } from '../vmi/status';

/** The VirtualMachinePool resource (defined with the other well-known kinds). */
export { VirtualMachinePoolType };

/** Event reasons (upstream values). */
export const PoolEventReason = {
  SuccessfulCreate: 'SuccessfulCreate',
  FailedCreate: 'FailedCreate',
  SuccessfulDelete: 'SuccessfulDelete',
  FailedDelete: 'FailedDelete',
  SuccessfulUpdate: 'SuccessfulUpdate',
} as const;

export interface PoolControllerDeps extends ControllerDeps {
  pools: Lister<VirtualMachinePool>;
  vms: Lister<VirtualMachine>;
  expectations: Expectations;
  onWrite?: (kind: string, verb: 'create' | 'update' | 'delete') => void;
}

function indexOf(pool: string, vm: VirtualMachine): number {
  const name = vm.metadata?.name ?? '';
  const m = name.startsWith(`${pool}-`) ? /^(\d+)$/.exec(name.slice(pool.length + 1)) : null;
  return m ? Number(m[1]) : -1;
}

/**
 * Reconciles one VirtualMachinePool (`namespace/name` key): scales its VMs to
 * `spec.replicas`, keeps them on the pool's template and writes the pool's status.
 */
export class PoolController implements KeyReconciler {
  constructor(private readonly d: PoolControllerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const pool = this.d.pools.get(key);
    if (!pool) {
      this.d.expectations.delete(key);
      return undefined;
    }
    const name = pool.metadata?.name ?? '';
    const selector = parseLabelSelector(formatLabelSelector((pool.spec.selector ?? {}) as LabelSelectorSpec));
    const vms = this.d.vms
      .list(pool.metadata?.namespace)
      .filter((v) =>
        (v.metadata?.ownerReferences ?? []).some((r) => r.controller && r.uid === pool.metadata?.uid),
      )
      .filter((v) => selector.matches(v.metadata?.labels));
    let failure: { reason: string; message: string } | undefined;
    if (this.d.expectations.satisfied(key) && !pool.spec.paused && !pool.metadata?.deletionTimestamp) {
      try {
        await this.scale(key, name, pool, vms);
      } catch (err) {
        failure = { reason: PoolEventReason.FailedCreate, message: (err as Error).message };
      }
    }
    await this.writeStatus(pool, vms, failure);
    return failure ? { requeueAfterMs: 5000 } : undefined;
  }

  private async scale(
    key: string,
    name: string,
    pool: VirtualMachinePool,
    vms: VirtualMachine[],
  ): Promise<void> {
    const live = vms.filter((v) => !v.metadata?.deletionTimestamp);
    const want = pool.spec.replicas ?? 1;
    if (live.length < want) {
      const used = new Set(live.map((v) => indexOf(name, v)));
      const todo: number[] = [];
      for (let i = 0; todo.length < want - live.length; i++) if (!used.has(i)) todo.push(i);
      this.d.expectations.expectCreations(key, todo.length);
      for (const i of todo) {
        const vm = this.buildVm(pool, i);
        try {
          await this.d.client.create(VirtualMachineType, vm as KubeObject);
          this.d.onWrite?.('VirtualMachine', 'create');
          this.d.recorder.event(
            pool,
            'Normal',
            PoolEventReason.SuccessfulCreate,
            `Created VM ${vm.metadata?.namespace}/${vm.metadata?.name}`,
          );
        } catch (err) {
          this.d.expectations.creationObserved(key);
          this.d.recorder.event(
            pool,
            'Warning',
            PoolEventReason.FailedCreate,
            `Error creating VM ${vm.metadata?.name}: ${(err as Error).message}`,
          );
          throw err;
        }
      }
    } else if (live.length > want) {
      const victims = [...live]
        .sort(
          (a, b) =>
            Number(a.status?.ready === true) - Number(b.status?.ready === true) ||
            indexOf(name, b) - indexOf(name, a),
        )
        .slice(0, live.length - want);
      await deleteOwned(this.d, {
        key,
        owner: pool,
        resource: VirtualMachineType,
        victims,
        deleted: (v) => `Deleted VM ${v.metadata?.namespace}/${v.metadata?.name}`,
        failed: (v, err) => `Error deleting VM ${v.metadata?.namespace}/${v.metadata?.name}: ${err.message}`,
        onDeleted: () => this.d.onWrite?.('VirtualMachine', 'delete'),
      });
    }
    // Template changes reach the existing VMs; the VM controller then asks for a restart.
    for (const v of live) {
      const wanted = this.buildVm(pool, indexOf(name, v));
      if (sameJson(v.spec, wanted.spec) && sameJson(v.metadata?.labels, wanted.metadata?.labels)) continue;
      try {
        await this.d.client.update(VirtualMachineType, {
          ...v,
          metadata: { ...v.metadata, labels: wanted.metadata?.labels },
          spec: wanted.spec,
        } as KubeObject);
        this.d.onWrite?.('VirtualMachine', 'update');
        this.d.recorder.event(
          pool,
          'Normal',
          PoolEventReason.SuccessfulUpdate,
          `Updated VM ${v.metadata?.namespace}/${v.metadata?.name}`,
        );
      } catch (err) {
        if (!(err instanceof ConflictError) && !(err instanceof NotFoundError)) throw err;
      }
    }
  }

  /** The VM at `index`: `<pool>-<index>`, the template's labels and spec, owned by the pool. */
  buildVm(pool: VirtualMachinePool, index: number): VirtualMachine {
    const t = pool.spec.virtualMachineTemplate;
    return {
      apiVersion: 'kubevirt.io/v1',
      metadata: {
        name: `${pool.metadata?.name}-${index}`,
        namespace: pool.metadata?.namespace,
        labels: { ...(t.metadata?.labels ?? {}) },
        annotations: { ...(t.metadata?.annotations ?? {}) },
        ownerReferences: [controllerRef('pool.kubevirt.io/v1beta1', 'VirtualMachinePool', pool)],
      },
      spec: structuredClone(t.spec ?? ({ template: {} } as VirtualMachine['spec'])),
    };
  }

  private async writeStatus(
    pool: VirtualMachinePool,
    vms: VirtualMachine[],
    failure?: { reason: string; message: string },
  ): Promise<void> {
    const now = timestamp(this.d.now?.() ?? new Date());
    const status: VirtualMachinePoolStatus = structuredClone(pool.status ?? {});
    const live = vms.filter((v) => !v.metadata?.deletionTimestamp);
    status.replicas = live.length;
    status.readyReplicas = live.filter((v) => v.status?.ready === true).length;
    status.labelSelector = formatLabelSelector((pool.spec.selector ?? {}) as LabelSelectorSpec);
    let conds = (status.conditions ?? []) as never[];
    conds = (
      failure
        ? setCondition(
            conds,
            { type: 'ReplicaFailure', status: 'True', reason: failure.reason, message: failure.message },
            now,
          )
        : removeCondition(conds, 'ReplicaFailure')
    ) as never[];
    if (conds.length) status.conditions = conds;
    else delete status.conditions;
    if (sameJson(pool.status ?? {}, status)) return;
    try {
      await this.d.client.updateStatus(VirtualMachinePoolType, { ...pool, status } as KubeObject);
      this.d.onWrite?.('VirtualMachinePool', 'update');
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      throw err;
    }
  }
}
