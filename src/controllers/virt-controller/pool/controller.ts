/**
 * The VirtualMachinePool controller (upstream pkg/virt-controller/watch/pool): keeps
 * `spec.replicas` VirtualMachines named `<pool>-<index>` from the VM template, owned by
 * the pool and labelled with the pool revision they follow. Each pass, as upstream's
 * execute: autohealing replaces VMs that keep failing to start (autoheal.ts); then, with
 * the expectations met and the pool neither paused nor deleting, it scales (lowest free
 * index out; in by the scale-in strategy's selection policy), then rolls template changes
 * out by the update strategy (update-strategy.ts), then prunes revisions no VM or VMI
 * uses (revisions.ts). Status: replicas, readyReplicas, labelSelector and the
 * ReplicaFailure and ReplicaPaused conditions.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
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
import { ConflictError, NotFoundError } from '../../runtime/errors';
import { VirtualMachinePoolType, VirtualMachineType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import { formatLabelSelector, type LabelSelectorSpec, parseLabelSelector } from '../../runtime/selectors';
import type { KubeObject } from '../../runtime/types';
import { deleteOwned } from '../services/delete-owned';
import { removeCondition, setCondition } from '../vmi/status';
import { failingVms } from './autoheal';
import { PoolRevisions } from './revisions';
import { filterBySelectors, sortBySelectionPolicy } from './selection';
import { PoolUpdater, vmReady } from './update-strategy';
import { buildPoolVm, POOL_REVISION_LABEL, vmIndex } from './vm-template';

/** The VirtualMachinePool resource (defined with the other well-known kinds). */
export { VirtualMachinePoolType };

/** Event and condition reasons (upstream values). */
export const PoolEventReason = {
  SuccessfulCreate: 'SuccessfulCreate',
  FailedCreate: 'FailedCreate',
  SuccessfulDelete: 'SuccessfulDelete',
  FailedDelete: 'FailedDelete',
  SuccessfulUpdate: 'SuccessfulUpdate',
  FailedUpdate: 'FailedUpdate',
  FailedScaleOut: 'FailedScaleOut',
  FailedScaleIn: 'FailedScaleIn',
  FailedRevisionPruning: 'FailedRevisionPruning',
  SuccessfulPaused: 'SuccessfulPaused',
  SuccessfulResume: 'SuccessfulResume',
} as const;

export interface PoolControllerDeps extends ControllerDeps {
  pools: Lister<VirtualMachinePool>;
  vms: Lister<VirtualMachine>;
  /** The VMIs, to tell which revision each running VM was started from. */
  vmis: Lister<VirtualMachineInstance>;
  expectations: Expectations;
  onWrite?: (kind: string, verb: 'create' | 'update' | 'delete') => void;
}

/** An error of one sync step, with the reason the ReplicaFailure condition carries. */
class SyncError extends Error {
  constructor(
    readonly reason: string,
    cause: unknown,
  ) {
    super((cause as Error).message);
  }
}

async function step<T>(reason: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw err instanceof SyncError ? err : new SyncError(reason, err);
  }
}

/**
 * Reconciles one VirtualMachinePool (`namespace/name` key): heals, scales and updates its
 * VMs and writes the pool's status.
 */
export class PoolController implements KeyReconciler {
  private readonly revisions: PoolRevisions;
  private readonly updater: PoolUpdater;

  constructor(private readonly d: PoolControllerDeps) {
    this.revisions = new PoolRevisions(d.client, (verb) => d.onWrite?.('ControllerRevision', verb));
    this.updater = new PoolUpdater({ ...d, revisions: this.revisions });
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const pool = this.d.pools.get(key);
    if (!pool) {
      this.d.expectations.delete(key);
      return undefined;
    }
    const selector = parseLabelSelector(formatLabelSelector((pool.spec.selector ?? {}) as LabelSelectorSpec));
    const vms = this.d.vms
      .list(pool.metadata?.namespace)
      .filter((v) =>
        (v.metadata?.ownerReferences ?? []).some((r) => r.controller && r.uid === pool.metadata?.uid),
      )
      .filter((v) => selector.matches(v.metadata?.labels));
    const now = this.d.now?.() ?? new Date();
    let failure: SyncError | undefined;
    let requeueAfterMs: number | undefined;
    const later = (ms: number | undefined) => {
      if (ms !== undefined) requeueAfterMs = Math.min(requeueAfterMs ?? ms, ms);
    };
    const deleting = pool.metadata?.deletionTimestamp !== undefined;
    try {
      if (pool.spec.autohealing && !deleting) {
        const { replace, retryInMs } = failingVms(vms, pool.spec.autohealing, now);
        later(retryInMs);
        if (replace.length) await step(PoolEventReason.FailedScaleIn, () => this.remove(key, pool, replace));
      }
      const ready = () => this.d.expectations.satisfied(key);
      if (ready() && !pool.spec.paused && !deleting) {
        const scaled = await this.scale(key, pool, vms);
        const live = vms.filter((v) => !v.metadata?.deletionTimestamp);
        if (ready() && scaled) {
          const u = await step(PoolEventReason.FailedUpdate, () => this.updater.update(pool, live));
          later(u.requeueAfterMs);
          if (ready() && u.stable)
            await step(PoolEventReason.FailedRevisionPruning, () =>
              this.revisions.prune(pool, this.inUse(vms)),
            );
        }
      }
    } catch (err) {
      failure = err instanceof SyncError ? err : new SyncError(PoolEventReason.FailedUpdate, err);
      later(5000);
    }
    await this.writeStatus(pool, vms, now, failure);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  }

  /** Upstream scale: true when the pool already has `spec.replicas` VMs. */
  private async scale(key: string, pool: VirtualMachinePool, vms: VirtualMachine[]): Promise<boolean> {
    const diff = vms.length - (pool.spec.replicas ?? 1);
    if (diff < 0) await step(PoolEventReason.FailedScaleOut, () => this.scaleOut(key, pool, -diff));
    else if (diff > 0) {
      const scaleIn = pool.spec.scaleInStrategy;
      // Unmanaged and opportunistic scale-in leave removing VMs to their users.
      if (!scaleIn?.unmanaged && !scaleIn?.opportunistic) {
        const live = vms.filter((v) => !v.metadata?.deletionTimestamp);
        const count = diff - (vms.length - live.length);
        const policy = scaleIn?.proactive?.selectionPolicy;
        const victims = filterBySelectors(sortBySelectionPolicy(live, policy), policy).slice(
          0,
          Math.max(count, 0),
        );
        if (victims.length) await step(PoolEventReason.FailedScaleIn, () => this.remove(key, pool, victims));
      }
    }
    return diff === 0;
  }

  private async scaleOut(key: string, pool: VirtualMachinePool, count: number): Promise<void> {
    const name = pool.metadata?.name ?? '';
    // Names taken by any VM of the namespace (one being deleted included), as upstream.
    const used = new Set(this.d.vms.list(pool.metadata?.namespace).map((v) => vmIndex(name, v)));
    const todo: number[] = [];
    for (let i = 0; todo.length < count; i++) if (!used.has(i)) todo.push(i);
    const revision = await this.revisions.ensure(pool);
    this.d.expectations.expectCreations(key, todo.length);
    for (const i of todo) {
      const vm = buildPoolVm(pool, i, revision);
      try {
        await this.d.client.create(VirtualMachineType, vm as KubeObject);
      } catch (err) {
        this.d.expectations.creationObserved(key);
        const msg = `Error creating VM ${vm.metadata?.name}: ${(err as Error).message}`;
        this.d.recorder.event(pool, 'Warning', PoolEventReason.FailedCreate, msg);
        throw err;
      }
      this.d.onWrite?.('VirtualMachine', 'create');
      const id = `${vm.metadata?.namespace}/${vm.metadata?.name}`;
      this.d.recorder.event(pool, 'Normal', PoolEventReason.SuccessfulCreate, `Created VM ${id}`);
    }
  }

  private remove(key: string, pool: VirtualMachinePool, victims: VirtualMachine[]): Promise<void> {
    return deleteOwned(this.d, {
      key,
      owner: pool,
      resource: VirtualMachineType,
      victims: victims as (VirtualMachine & KubeObject)[],
      deleted: (v) =>
        `Deleted VM ${v.metadata?.namespace}/${v.metadata?.name} with uid ${v.metadata?.uid} from pool`,
      failed: (v, err) =>
        `Error deleting virtual machine ${v.metadata?.namespace}/${v.metadata?.name}: ${err.message}`,
      onDeleted: () => this.d.onWrite?.('VirtualMachine', 'delete'),
    });
  }

  /** The revisions the pool's VMs and their VMIs name. */
  private inUse(vms: VirtualMachine[]): Set<string> {
    const names = new Set<string>();
    for (const vm of vms) {
      const a = vm.metadata?.labels?.[POOL_REVISION_LABEL];
      const vmi = this.d.vmis.get(`${vm.metadata?.namespace}/${vm.metadata?.name}`);
      const b = vmi?.metadata?.labels?.[POOL_REVISION_LABEL];
      if (a) names.add(a);
      if (b) names.add(b);
    }
    return names;
  }

  private async writeStatus(
    pool: VirtualMachinePool,
    vms: VirtualMachine[],
    at: Date,
    failure?: SyncError,
  ): Promise<void> {
    const now = timestamp(at);
    const status: VirtualMachinePoolStatus = structuredClone(pool.status ?? {});
    status.replicas = vms.length;
    status.readyReplicas = vms.filter(vmReady).length;
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
    const wasPaused = conds.some((c: { type: string }) => c.type === 'ReplicaPaused');
    if (pool.spec.paused && !wasPaused) {
      const c = {
        type: 'ReplicaPaused',
        status: 'True',
        reason: PoolEventReason.SuccessfulPaused,
        message: 'Pool controller is paused',
      };
      conds = setCondition(conds, c, now) as never[];
      this.d.recorder.event(pool, 'Normal', PoolEventReason.SuccessfulPaused, 'Pool is paused');
    } else if (!pool.spec.paused && wasPaused) {
      conds = removeCondition(conds, 'ReplicaPaused') as never[];
      this.d.recorder.event(pool, 'Normal', PoolEventReason.SuccessfulResume, 'Pool is unpaused');
    }
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
