/**
 * Rolling a pool's template change out (upstream update, opportunisticUpdate,
 * proactiveUpdate and isOutdatedVMI in pkg/virt-controller/watch/pool):
 * - Unmanaged: VMs are never touched after creation.
 * - Every other strategy first moves outdated VMs (their revision's template differs from
 *   the pool's) to the current revision: spec, labels and annotations replaced. Under
 *   Opportunistic that is all: a running VMI picks the change up at its next restart.
 * - Proactive (the default): a running VMI started from another revision whose VMI
 *   template differs is restarted (deleted; the VM's run strategy starts the new one), at
 *   most `maxUnavailable` VMIs unavailable at a time (default 100%), in the selection
 *   policy's order; a VMI whose revision differs only in name gets the new revision label;
 *   a VM whose DataVolume templates changed is deleted and recreated by the pool.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachinePool,
} from '../../../api/generated/types';
import type { ControllerDeps, Lister } from '../../common/controller-ports';
import { VmiResource } from '../../common/vmi-resource';
import { NotFoundError } from '../../runtime/errors';
import { VirtualMachineType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import type { KubeObject } from '../../runtime/types';
import type { PoolRevisions } from './revisions';
import { filterBySelectors, sortBySelectionPolicy } from './selection';
import { POOL_REVISION_LABEL, updatedPoolVm, vmIndex } from './vm-template';

/** Upstream defaultRetryDelay: when maxUnavailable holds a rollout back. */
export const UPDATE_RETRY_MS = 3000;

/** What a running VMI needs to follow its VM's revision. */
export type VmiUpdate = 'restart' | 'label-patch' | 'none' | 'vm-delete';

export interface PoolUpdaterDeps extends ControllerDeps {
  vmis: Lister<VirtualMachineInstance>;
  revisions: PoolRevisions;
  onWrite?: (kind: string, verb: 'create' | 'update' | 'delete') => void;
}

/** Whether the VM's Ready condition is True (upstream filterReadyVMs). */
export function vmReady(vm: VirtualMachine): boolean {
  return vm.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

function vmiReady(vmi: VirtualMachineInstance | undefined): boolean {
  if (!vmi || vmi.metadata?.deletionTimestamp || vmi.status?.phase !== 'Running') return false;
  return vmi.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * `spec.maxUnavailable` as a count (upstream calculateMaxUnavailableInt): an integer, or a
 * percentage of `spec.replicas` rounded down; at least 1.
 */
export function maxUnavailable(pool: VirtualMachinePool): number {
  const v = pool.spec.maxUnavailable ?? '100%';
  const replicas = pool.spec.replicas ?? 1;
  const n =
    typeof v === 'number' ? v : Math.floor((replicas * Number.parseInt(v.replace(/%$/, ''), 10)) / 100);
  return Number.isFinite(n) && n >= 1 ? n : 1;
}

/** Applies the pool's update strategy to its live VMs. */
export class PoolUpdater {
  constructor(private readonly d: PoolUpdaterDeps) {}

  /**
   * One update pass; `stable` when no VM was outdated, `requeueAfterMs` when
   * maxUnavailable held VMIs back.
   */
  async update(
    pool: VirtualMachinePool,
    vms: VirtualMachine[],
  ): Promise<{ stable: boolean; requeueAfterMs?: number }> {
    const strategy = pool.spec.updateStrategy;
    if (strategy?.unmanaged) return { stable: true };
    const candidates = filterBySelectors(vms, strategy?.proactive?.selectionPolicy);
    const outdated: VirtualMachine[] = [];
    const current: VirtualMachine[] = [];
    for (const vm of candidates) ((await this.outdatedVm(pool, vm)) ? outdated : current).push(vm);
    await this.updateVms(pool, outdated);
    let requeueAfterMs: number | undefined;
    if (!strategy?.opportunistic) requeueAfterMs = await this.restartVmis(pool, current);
    return { stable: outdated.length === 0, requeueAfterMs };
  }

  /** Upstream isOutdatedVM: no revision label or revision, or another VM template. */
  private async outdatedVm(pool: VirtualMachinePool, vm: VirtualMachine): Promise<boolean> {
    const name = vm.metadata?.labels?.[POOL_REVISION_LABEL];
    if (!name) return true;
    const spec = await this.d.revisions.spec(pool, name);
    return !spec || !sameJson(spec.virtualMachineTemplate, pool.spec.virtualMachineTemplate);
  }

  private async updateVms(pool: VirtualMachinePool, outdated: VirtualMachine[]): Promise<void> {
    if (outdated.length === 0) return;
    const revision = await this.d.revisions.ensure(pool);
    const name = pool.metadata?.name ?? '';
    for (const vm of outdated) {
      const next = updatedPoolVm(pool, vm, vmIndex(name, vm), revision);
      const id = `${vm.metadata?.namespace}/${vm.metadata?.name}`;
      try {
        await this.d.client.update(VirtualMachineType, next as KubeObject);
      } catch (err) {
        const msg = `Error updating virtual machine ${id}: ${(err as Error).message}`;
        this.d.recorder.event(pool, 'Warning', 'FailedUpdate', msg);
        throw err;
      }
      this.d.onWrite?.('VirtualMachine', 'update');
      this.d.recorder.event(pool, 'Normal', 'SuccessfulUpdate', `Updated VM ${id}`);
    }
  }

  /** Upstream proactiveUpdate; returns a requeue delay when maxUnavailable was reached. */
  private async restartVmis(pool: VirtualMachinePool, vms: VirtualMachine[]): Promise<number | undefined> {
    const vmiOf = (vm: VirtualMachine) => this.d.vmis.get(`${vm.metadata?.namespace}/${vm.metadata?.name}`);
    // VMs not ready first: rolling them over costs no availability (upstream handleUnhealthyVMIs).
    for (const vm of vms.filter((v) => !vmReady(v))) {
      const vmi = vmiOf(vm);
      if (!vmi || vmi.metadata?.deletionTimestamp) continue;
      await this.apply(pool, vm, vmi, await this.vmiUpdate(pool, vm, vmi));
    }
    const limit = maxUnavailable(pool);
    let budget = limit - vms.filter((vm) => !vmiReady(vmiOf(vm))).length;
    for (const vm of sortBySelectionPolicy(vms, pool.spec.updateStrategy?.proactive?.selectionPolicy)) {
      const vmi = vmiOf(vm);
      if (!vmi) continue;
      const kind = await this.vmiUpdate(pool, vm, vmi);
      if (kind === 'none') continue;
      if (budget <= 0) return UPDATE_RETRY_MS;
      await this.apply(pool, vm, vmi, kind);
      budget--;
    }
    return undefined;
  }

  /** Upstream isOutdatedVMI: compares the VMI templates of the VM's and the VMI's revisions. */
  async vmiUpdate(
    pool: VirtualMachinePool,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance,
  ): Promise<VmiUpdate> {
    const vmRev = vm.metadata?.labels?.[POOL_REVISION_LABEL];
    if (!vmRev || vmi.metadata?.deletionTimestamp) return 'none';
    const vmiRev = vmi.metadata?.labels?.[POOL_REVISION_LABEL];
    if (!vmiRev) return 'restart';
    if (vmRev === vmiRev) return 'none';
    const want = await this.d.revisions.spec(pool, vmRev);
    if (!want) return 'none';
    const had = await this.d.revisions.spec(pool, vmiRev);
    if (!had) return 'restart';
    const [w, h] = [want.virtualMachineTemplate.spec, had.virtualMachineTemplate.spec];
    if (!sameJson(h?.dataVolumeTemplates, w?.dataVolumeTemplates)) return 'vm-delete';
    if (!sameJson(h?.template, w?.template)) return 'restart';
    return 'label-patch';
  }

  private async apply(
    pool: VirtualMachinePool,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance,
    kind: VmiUpdate,
  ): Promise<void> {
    const ns = vm.metadata?.namespace;
    const id = `${ns}/${vm.metadata?.name}`;
    try {
      if (kind === 'restart') {
        await this.d.client.delete(VmiResource, vmi.metadata?.name ?? '', {
          namespace: ns,
          preconditions: { uid: vmi.metadata?.uid },
        });
        this.d.onWrite?.('VirtualMachineInstance', 'delete');
      } else if (kind === 'vm-delete') {
        await this.d.client.delete(VirtualMachineType, vm.metadata?.name ?? '', {
          namespace: ns,
          preconditions: { uid: vm.metadata?.uid },
          propagationPolicy: 'Foreground',
        });
        this.d.onWrite?.('VirtualMachine', 'delete');
      } else if (kind === 'label-patch') {
        const labels = {
          ...(vmi.metadata?.labels ?? {}),
          [POOL_REVISION_LABEL]: vm.metadata?.labels?.[POOL_REVISION_LABEL],
        };
        await this.d.client.patch(
          VmiResource,
          vmi.metadata?.name ?? '',
          [{ op: 'add', path: '/metadata/labels', value: labels }],
          {
            namespace: ns,
            type: 'json',
          },
        );
        this.d.onWrite?.('VirtualMachineInstance', 'update');
      } else return;
    } catch (err) {
      if (err instanceof NotFoundError) return;
      this.d.recorder.event(
        pool,
        'Warning',
        'FailedUpdate',
        `Error updating resource ${id}: ${(err as Error).message}`,
      );
      throw err;
    }
    this.d.recorder.event(pool, 'Normal', 'SuccessfulDelete', `Successfully updated resource ${id}`);
  }
}
