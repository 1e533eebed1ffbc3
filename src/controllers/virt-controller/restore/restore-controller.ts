/**
 * The VirtualMachineRestore controller (upstream pkg/storage/snapshot/restore.go): waits
 * for the target VM to be stopped (or stops it, or fails, by `targetReadinessPolicy`),
 * marks it `status.restoreInProgress`, creates one claim per volume backup from its
 * VolumeSnapshot (dataSource; InPlace deletes the old claim first), then replaces the
 * target's spec with the snapshot's (or creates the new VM), and completes.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineRestore,
  VirtualMachineRestoreStatus,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
  VolumeRestore,
} from '../../../api/generated/types';
import type { ControllerDeps, KeyReconciler, Lister, ReconcileResult } from '../../common/controller-ports';
import { timestamp } from '../../common/controller-ports';
import { controllerRef } from '../../common/owner-ref';
import { NotFoundError } from '../../runtime/errors';
import { PersistentVolumeClaimType, VirtualMachineType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import type { KubeObject } from '../../runtime/types';
import { ConditionType, condition, hasCondition, updateCondition } from '../snapshot/conditions';
import {
  type Pvc,
  type StorageClass,
  VirtualMachineRestoreType,
  type VolumeSnapshot,
} from '../snapshot/resources';
import { RestoreEvent, RestoreMessage } from './messages';
import { applyPatches, RestoreError } from './patches';
import {
  hasLastRestore,
  POPULATED_FOR_ANNOTATION,
  restoredVm,
  restorePvc,
  restoreVolumeName,
  VolumeRestorePolicy,
} from './restored-vm';

export const RESTORE_FINALIZER = 'snapshot.kubevirt.io/vmrestore-protection';
/** upstream's DefaultGracePeriod of WaitGracePeriodAndFail. */
export const RESTORE_GRACE_PERIOD_MS = 5 * 60_000;

export interface RestoreDeps extends ControllerDeps {
  restores: Lister<VirtualMachineRestore>;
  snapshots: Lister<VirtualMachineSnapshot>;
  contents: Lister<VirtualMachineSnapshotContent>;
  vms: Lister<VirtualMachine>;
  vmis: Lister<VirtualMachineInstance>;
  claims: Lister<Pvc>;
  volumeSnapshots: Lister<VolumeSnapshot>;
  storageClasses: Lister<StorageClass>;
}

type Obj = KubeObject & { metadata: NonNullable<KubeObject['metadata']> };

export class VmRestoreController implements KeyReconciler {
  constructor(private readonly d: RestoreDeps) {}

  private now(): string {
    return timestamp(this.d.now?.() ?? new Date());
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const r = this.d.restores.get(key);
    if (!r) return undefined;
    const out = structuredClone(r);
    if (!out.status) {
      out.status = { complete: false };
      this.cond(out, 'Progressing', true, 'Initializing VirtualMachineRestore');
      this.cond(out, 'Ready', false, 'Initializing VirtualMachineRestore');
      await this.writeStatus(r, out.status);
      return undefined;
    }
    const ns = r.metadata?.namespace ?? '';
    const target = this.d.vms.get(`${ns}/${r.spec.target.name}`);
    if (r.metadata?.deletionTimestamp) return this.deleting(r, target);
    if (out.status.complete || hasCondition(out.status.conditions, ConditionType.Failure)) return undefined;
    try {
      return await this.progress(
        r,
        out as VirtualMachineRestore & { status: VirtualMachineRestoreStatus },
        target,
      );
    } catch (e) {
      const msg = (e as Error).message;
      this.d.recorder.event(
        r,
        'Warning',
        RestoreEvent.Error,
        `VirtualMachineRestore encountered error ${msg}`,
      );
      const st = structuredClone(r.status ?? {});
      const x = { ...r, status: st };
      this.cond(x, 'Progressing', false, msg);
      this.cond(x, 'Ready', false, msg);
      await this.writeStatus(r, x.status);
      if (e instanceof RestoreError) return { requeueAfterMs: 5000 };
      throw e;
    }
  }

  private async progress(
    r: VirtualMachineRestore,
    out: VirtualMachineRestore & { status: VirtualMachineRestoreStatus },
    target: VirtualMachine | undefined,
  ): Promise<ReconcileResult | undefined> {
    const ns = r.metadata?.namespace ?? '';
    // Owned by the target VM, protected by our finalizer.
    const meta = { ...(r.metadata ?? {}) };
    if (!meta.ownerReferences?.length && target?.metadata?.uid) meta.ownerReferences = [vmOwner(target)];
    if (!(meta.finalizers ?? []).includes(RESTORE_FINALIZER))
      meta.finalizers = [...(meta.finalizers ?? []), RESTORE_FINALIZER];
    if (!sameJson(meta, r.metadata)) {
      await this.d.client.update(VirtualMachineRestoreType, {
        ...(r as VirtualMachineRestore & Obj),
        metadata: meta,
      });
      return undefined;
    }
    if (target && this.d.vmis.get(`${ns}/${target.metadata?.name}`))
      return this.targetNotReady(r, out, target);

    const snap = this.d.snapshots.get(`${ns}/${r.spec.virtualMachineSnapshotName}`);
    const sk = `${ns}/${r.spec.virtualMachineSnapshotName}`;
    if (!snap) throw new RestoreError(`VMSnapshot ${sk} does not exist`);
    if (snap.status?.phase === 'Failed')
      throw new RestoreError(`VMSnapshot ${sk} failed and is invalid to use`);
    if (!snap.status?.readyToUse) throw new RestoreError(`VMSnapshot ${sk} not ready`);
    const content = this.d.contents.get(`${ns}/${snap.status.virtualMachineSnapshotContentName}`);
    if (!content?.status?.readyToUse)
      throw new RestoreError(
        `VMSnapshotContent ${ns}/${snap.status.virtualMachineSnapshotContentName} not ready`,
      );
    const snapVm = content.spec.source.virtualMachine as VirtualMachine | undefined;
    if (!snapVm) throw new RestoreError('unexpected snapshot source');
    if (
      target &&
      !hasLastRestore(r, target) &&
      snap.status.sourceUID &&
      target.metadata?.uid !== snap.status.sourceUID
    )
      throw new RestoreError(RestoreMessage.existingTarget);

    let cur = target;
    if (cur && !hasLastRestore(r, cur)) {
      const holder = cur.status?.restoreInProgress;
      if (holder && holder !== r.metadata?.name) throw new RestoreError(`vm restore ${holder} in progress`);
      if (!holder)
        cur = await this.d.client.updateStatus<VirtualMachine & Obj>(VirtualMachineType, {
          ...(cur as VirtualMachine & Obj),
          status: { ...(cur.status ?? {}), restoreInProgress: r.metadata?.name },
        });
    }

    // The volume restores, then their claims.
    const restores: VolumeRestore[] = [];
    for (const b of content.spec.volumeBackups ?? []) {
      const have = out.status.restores?.find((x) => x.volumeName === b.volumeName);
      if (have) {
        restores.push(have);
        continue;
      }
      if (!b.volumeSnapshotName)
        throw new RestoreError(`VolumeSnapshotName missing for volume ${b.volumeName}`);
      const claim = b.persistentVolumeClaim.metadata?.name ?? '';
      const vol = snapVm.spec.template.spec?.volumes?.find((v) => v.name === b.volumeName);
      const dvTemplate =
        vol?.dataVolume &&
        snapVm.spec.dataVolumeTemplates?.some((t) => t.metadata?.name === vol.dataVolume!.name);
      const name = restoreVolumeName(r, b.volumeName, claim);
      restores.push({
        volumeName: b.volumeName,
        persistentVolumeClaim: name,
        volumeSnapshotName: b.volumeSnapshotName,
        ...(dvTemplate ? { dataVolumeName: name } : {}),
      });
    }
    if (!sameJson(out.status.restores ?? [], restores)) {
      out.status.restores = restores;
      this.cond(out, 'Progressing', true, 'Creating new PVCs');
      this.cond(out, 'Ready', false, 'Waiting for new PVCs');
      await this.writeStatus(r, out.status);
      return undefined;
    }
    let waiting = false;
    for (const vr of restores) {
      const pvc = this.d.claims.get(`${ns}/${vr.persistentVolumeClaim}`);
      const backup = content.spec.volumeBackups!.find((b) => b.volumeName === vr.volumeName)!;
      if (!pvc) {
        const vs = this.d.volumeSnapshots.get(`${ns}/${vr.volumeSnapshotName}`);
        if (!vs) throw new RestoreError(`missing volumeSnapshot ${vr.volumeSnapshotName}`);
        const made = restorePvc(r, vr.persistentVolumeClaim, backup, vs, snapVm.metadata ?? {});
        if (vr.dataVolumeName) made.metadata!.annotations![POPULATED_FOR_ANNOTATION] = vr.dataVolumeName;
        else if (cur && r.spec.volumeOwnershipPolicy !== 'None')
          made.metadata!.ownerReferences = [vmOwner(cur)];
        await this.d.client.create(PersistentVolumeClaimType, made as never);
        waiting = true;
      } else if (r.spec.volumeRestorePolicy === VolumeRestorePolicy.InPlace && !hasLastRestore(r, pvc)) {
        await this.d.client
          .delete(PersistentVolumeClaimType, vr.persistentVolumeClaim, { namespace: ns })
          .catch((e) => {
            if (!(e instanceof NotFoundError)) throw e;
          });
        waiting = true;
      } else if (pvc.status?.phase === 'Pending') {
        const sc = pvc.spec?.storageClassName
          ? this.d.storageClasses.get(pvc.spec.storageClassName)
          : undefined;
        // WaitForFirstConsumer claims bind when the VM's pod is scheduled: do not wait for them.
        if (sc?.volumeBindingMode !== 'WaitForFirstConsumer') waiting = true;
      } else if (pvc.status?.phase !== 'Bound' && pvc.status?.phase !== undefined) {
        throw new RestoreError(
          `PVC ${ns}/${pvc.metadata?.name} in status ${JSON.stringify(pvc.status.phase)}`,
        );
      }
    }
    if (waiting) {
      this.cond(out, 'Progressing', true, 'Creating new PVCs');
      this.cond(out, 'Ready', false, 'Waiting for new PVCs');
      await this.writeStatus(r, out.status);
      return { requeueAfterMs: 2000 };
    }

    // The target's spec.
    if (!cur || !hasLastRestore(r, cur)) {
      const vm = restoredVm(r, snapVm, cur, restores);
      if (!cur) {
        const patched = applyPatches(vm, r.spec.patches ?? []);
        const made = await this.d.client.create<VirtualMachine & Obj>(VirtualMachineType, patched as never);
        if (r.spec.volumeOwnershipPolicy !== 'None') await this.ownClaims(r, made, restores);
      } else {
        await this.d.client.update(VirtualMachineType, vm as never);
      }
      this.cond(out, 'Progressing', true, 'Updating target spec');
      this.cond(out, 'Ready', false, 'Waiting for target update');
      await this.writeStatus(r, out.status);
      return undefined;
    }
    if (cur.status?.restoreInProgress === r.metadata?.name) {
      const status = { ...(cur.status ?? {}) };
      delete status.restoreInProgress;
      delete status.memoryDumpRequest;
      await this.d.client.updateStatus(VirtualMachineType, { ...(cur as VirtualMachine & Obj), status });
    }
    this.d.recorder.event(
      r,
      'Normal',
      RestoreEvent.Complete,
      `Successfully completed VirtualMachineRestore ${r.metadata?.name}`,
    );
    out.status.complete = true;
    out.status.restoreTime = this.now();
    this.cond(out, 'Progressing', false, 'Operation complete');
    this.cond(out, 'Ready', true, 'Operation complete');
    await this.writeStatus(r, out.status);
    return undefined;
  }

  /** The target still runs: wait, stop it, or fail, by targetReadinessPolicy. */
  private async targetNotReady(
    r: VirtualMachineRestore,
    out: VirtualMachineRestore & { status: VirtualMachineRestoreStatus },
    target: VirtualMachine,
  ): Promise<ReconcileResult | undefined> {
    const policy = r.spec.targetReadinessPolicy ?? 'WaitGracePeriod';
    let reason: string;
    switch (policy) {
      case 'WaitEventually':
        reason = RestoreMessage.waitEventually;
        break;
      case 'StopTarget': {
        this.d.recorder.event(r, 'Warning', RestoreEvent.NotReady, RestoreMessage.stopTarget);
        this.cond(out, 'Progressing', false, RestoreMessage.stopTarget);
        this.cond(out, 'Ready', false, RestoreMessage.stopTarget);
        const spec: Record<string, unknown> =
          target.spec.running !== undefined ? { running: false } : { runStrategy: 'Halted' };
        await this.d.client.patch(
          VirtualMachineType,
          target.metadata?.name ?? '',
          { spec },
          { namespace: target.metadata?.namespace, type: 'merge' },
        );
        await this.writeStatus(r, out.status);
        return { requeueAfterMs: 2000 };
      }
      case 'WaitGracePeriod': {
        const created = Date.parse(String(r.metadata?.creationTimestamp ?? '')) || Date.now();
        if (created + RESTORE_GRACE_PERIOD_MS < (this.d.now?.() ?? new Date()).getTime())
          return this.fail(r, out, RestoreMessage.gracePeriodExceeded);
        reason = RestoreMessage.waitGracePeriod;
        break;
      }
      case 'FailImmediate':
        return this.fail(r, out, RestoreMessage.failImmediate);
      default:
        throw new Error(`unknown targetReadinessPolicy: ${policy}`);
    }
    this.d.recorder.event(r, 'Warning', RestoreEvent.NotReady, RestoreMessage.vmiExists);
    this.cond(out, 'Progressing', false, reason);
    this.cond(out, 'Ready', false, reason);
    await this.writeStatus(r, out.status);
    return { requeueAfterMs: 5000 };
  }

  private async fail(
    r: VirtualMachineRestore,
    out: VirtualMachineRestore & { status: VirtualMachineRestoreStatus },
    msg: string,
  ) {
    this.d.recorder.event(r, 'Warning', RestoreEvent.Failed, `VirtualMachineRestore failed ${msg}`);
    this.cond(out, 'Progressing', false, msg);
    this.cond(out, 'Ready', false, msg);
    this.cond(out, 'Failure', true, msg);
    await this.writeStatus(r, out.status);
    return undefined;
  }

  /** Deletion: the target's restoreInProgress is cleared, then the finalizer removed. */
  private async deleting(r: VirtualMachineRestore, target: VirtualMachine | undefined) {
    const f = r.metadata?.finalizers ?? [];
    if (!f.includes(RESTORE_FINALIZER)) return undefined;
    if (target && target.status?.restoreInProgress === r.metadata?.name) {
      const status = { ...(target.status ?? {}) };
      delete status.restoreInProgress;
      await this.d.client.updateStatus(VirtualMachineType, { ...(target as VirtualMachine & Obj), status });
    }
    await this.d.client.update(VirtualMachineRestoreType, {
      ...(r as VirtualMachineRestore & Obj),
      metadata: { ...r.metadata, finalizers: f.filter((x) => x !== RESTORE_FINALIZER) },
    });
    return undefined;
  }

  /** Claims restored for a new VM become the VM's (volumeOwnershipPolicy Vm). */
  private async ownClaims(r: VirtualMachineRestore, vm: VirtualMachine, restores: VolumeRestore[]) {
    for (const vr of restores) {
      if (vr.dataVolumeName) continue;
      await this.d.client.patch(
        PersistentVolumeClaimType,
        vr.persistentVolumeClaim,
        { metadata: { ownerReferences: [vmOwner(vm)] } },
        { namespace: r.metadata?.namespace, type: 'merge' },
      );
    }
  }

  private cond(
    r: { status?: VirtualMachineRestoreStatus },
    type: keyof typeof ConditionType,
    status: boolean,
    reason: string,
  ) {
    r.status = r.status ?? {};
    r.status.conditions = updateCondition(r.status.conditions, condition(type, status, reason, this.now()));
  }

  private async writeStatus(r: VirtualMachineRestore, status: VirtualMachineRestoreStatus | undefined) {
    if (sameJson(r.status ?? null, status ?? null)) return;
    await this.d.client.updateStatus(VirtualMachineRestoreType, {
      ...(r as VirtualMachineRestore & Obj),
      status,
    });
  }
}

function vmOwner(vm: VirtualMachine) {
  return controllerRef('kubevirt.io/v1', 'VirtualMachine', vm);
}
