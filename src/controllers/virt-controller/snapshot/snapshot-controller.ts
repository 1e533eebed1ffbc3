/**
 * The VirtualMachineSnapshot controller (upstream pkg/storage/snapshot, updateVMSnapshot):
 * locks the source VM, writes the VirtualMachineSnapshotContent (the VM as it is, and one
 * volume backup per PVC/DataVolume volume whose StorageClass has a VolumeSnapshotClass),
 * mirrors the content's progress into the snapshot's phase, conditions and indications,
 * fails it past `spec.failureDeadline`, unlocks the VM when done, and deletes the content
 * with the snapshot (deletionPolicy Delete) or keeps it (Retain, once ready).
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
  VirtualMachineSnapshotStatus,
  VolumeBackup,
} from '../../../api/generated/types';
import type { ControllerDeps, KeyReconciler, Lister, ReconcileResult } from '../../common/controller-ports';
import { timestamp } from '../../common/controller-ports';
import { NotFoundError } from '../../runtime/errors';
import { sameJson } from '../../runtime/same-json';
import type { KubeObject } from '../../runtime/types';
import {
  ConditionType,
  condition,
  FREEZE_LIMIT_REACHED,
  Indication,
  IndicationMessages,
  updateCondition,
} from './conditions';
import type { Pvc, StorageClass, VolumeSnapshot, VolumeSnapshotClass } from './resources';
import { VirtualMachineSnapshotContentType, VirtualMachineSnapshotType } from './resources';
import { volumeSnapshotClassFor } from './snapshot-class';
import * as st from './snapshot-state';
import { claimsByVolume, lockSource, type SourceState, sourceState, unlockSource } from './source';

/** Event reasons (upstream values). */
export const SnapshotEventReason = {
  ContentCreate: 'SuccessfulVirtualMachineSnapshotContentCreate',
  VolumeSnapshotCreate: 'SuccessfulVolumeSnapshotCreate',
  VolumeSnapshotMissing: 'VolumeSnapshotMissing',
} as const;

const RETRY_MS = 5000;

/** What the snapshot and content controllers read. */
export interface SnapshotDeps extends ControllerDeps {
  snapshots: Lister<VirtualMachineSnapshot>;
  contents: Lister<VirtualMachineSnapshotContent>;
  vms: Lister<VirtualMachine>;
  vmis: Lister<VirtualMachineInstance>;
  claims: Lister<Pvc>;
  volumeSnapshots: Lister<VolumeSnapshot>;
  storageClasses: Lister<StorageClass>;
  snapshotClasses: Lister<VolumeSnapshotClass>;
  /** Pods using any of these claims in the namespace (an offline source waits for none). */
  podsUsingClaims: (namespace: string, claims: string[]) => number;
}

/** The VolumeSnapshotClass of a claim's StorageClass ('' when none, or no class). */
export function claimSnapshotClass(d: SnapshotDeps, pvc: Pvc | undefined): string {
  const sc = pvc?.spec?.storageClassName;
  if (!sc) return '';
  return volumeSnapshotClassFor(sc, d.storageClasses, d.snapshotClasses);
}

type Obj = KubeObject & { metadata: NonNullable<KubeObject['metadata']> };

export class VmSnapshotController implements KeyReconciler {
  constructor(private readonly d: SnapshotDeps) {}

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    let snap = this.d.snapshots.get(key);
    if (!snap) return undefined;
    const ns = snap.metadata?.namespace ?? '';
    const now = this.now();
    const vm = this.d.vms.get(`${ns}/${snap.spec.source.name}`);
    const vmi = vm ? this.d.vmis.get(`${ns}/${vm.metadata?.name}`) : undefined;
    const state = vm ? sourceState(vm, vmi, snap) : undefined;
    const content = this.d.contents.get(`${ns}/${st.contentName(snap)}`);
    const terminating = st.isTerminating(snap, now);
    if (!terminating && !(snap.metadata?.finalizers ?? []).includes(st.SNAPSHOT_FINALIZER)) {
      snap = await this.d.client.update<VirtualMachineSnapshot & Obj>(VirtualMachineSnapshotType, {
        ...(snap as VirtualMachineSnapshot & Obj),
        metadata: {
          ...snap.metadata,
          finalizers: [...(snap.metadata?.finalizers ?? []), st.SNAPSHOT_FINALIZER],
        },
      });
    }
    let retry = 0;
    let canRemoveFinalizer = true;
    if (snap.status && vm && state) {
      if (st.isProgressing(snap) && !terminating) {
        if (!state.locked) {
          await lockSource(this.d, vm, snap, state);
          retry = RETRY_MS;
        } else if (!content) {
          await this.createContent(snap, vm, vmi);
        }
        canRemoveFinalizer = false;
      } else {
        if (st.canUnlockSource(snap, content, now) && (await unlockSource(this.d.client, vm, snap)))
          state.locked = false;
        canRemoveFinalizer = !state.locked;
      }
    }
    if (terminating && content && st.shouldDeleteContent(snap, content)) {
      await this.d.client
        .delete(VirtualMachineSnapshotContentType, content.metadata?.name ?? '', { namespace: ns })
        .catch((e) => {
          if (!(e instanceof NotFoundError)) throw e;
        });
    }
    snap = await this.updateStatus(snap, content, state, now);
    if (st.isDeleting(snap) && canRemoveFinalizer) {
      const f = snap.metadata?.finalizers ?? [];
      if (f.includes(st.SNAPSHOT_FINALIZER)) {
        await this.d.client.update(VirtualMachineSnapshotType, {
          ...(snap as VirtualMachineSnapshot & Obj),
          metadata: { ...snap.metadata, finalizers: f.filter((x) => x !== st.SNAPSHOT_FINALIZER) },
        });
      }
    }
    if (retry) return { requeueAfterMs: retry };
    const left = st.isProgressing(snap) ? st.timeUntilDeadline(snap, now) : 0;
    return left > 0 ? { requeueAfterMs: left + 50 } : undefined;
  }

  /** The content: the VM as it is now and a backup per snapshottable claim. */
  private async createContent(
    snap: VirtualMachineSnapshot,
    vm: VirtualMachine,
    _vmi: VirtualMachineInstance | undefined,
  ): Promise<void> {
    const ns = snap.metadata?.namespace ?? '';
    const volumeBackups: VolumeBackup[] = [];
    for (const [volumeName, claim] of claimsByVolume(vm)) {
      const pvc = this.d.claims.get(`${ns}/${claim}`);
      if (pvc?.status?.phase !== 'Bound' || !claimSnapshotClass(this.d, pvc)) continue;
      volumeBackups.push({
        volumeName,
        persistentVolumeClaim: {
          metadata: {
            name: pvc.metadata?.name,
            namespace: pvc.metadata?.namespace,
            labels: pvc.metadata?.labels,
            annotations: pvc.metadata?.annotations,
          },
          spec: structuredClone(pvc.spec ?? {}),
        } as VolumeBackup['persistentVolumeClaim'],
        volumeSnapshotName: st.volumeSnapshotName(snap, volumeName),
      });
    }
    const m = vm.metadata ?? {};
    const content = {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineSnapshotContent',
      metadata: { name: st.contentName(snap), namespace: ns, finalizers: [st.CONTENT_FINALIZER] },
      spec: {
        virtualMachineSnapshotName: snap.metadata?.name,
        source: {
          virtualMachine: {
            metadata: {
              name: m.name,
              namespace: m.namespace,
              uid: m.uid,
              generation: m.generation,
              labels: m.labels,
              annotations: m.annotations,
            },
            spec: structuredClone(vm.spec),
          },
        },
        volumeBackups,
      },
    };
    try {
      await this.d.client.create(VirtualMachineSnapshotContentType, content as unknown as KubeObject);
    } catch (e) {
      if ((e as { code?: number }).code !== 409 && !/already exists/i.test(String(e))) throw e;
    }
    this.d.recorder.event(
      snap,
      'Normal',
      SnapshotEventReason.ContentCreate,
      `Successfully created VirtualMachineSnapshotContent ${content.metadata.name}`,
    );
  }

  private async updateStatus(
    snap: VirtualMachineSnapshot,
    content: VirtualMachineSnapshotContent | undefined,
    state: SourceState | undefined,
    nowDate: Date,
  ): Promise<VirtualMachineSnapshot> {
    const now = timestamp(nowDate);
    const s: VirtualMachineSnapshotStatus = structuredClone(snap.status ?? { readyToUse: false });
    const vm = this.d.vms.get(`${snap.metadata?.namespace}/${snap.spec.source.name}`);
    if (vm?.metadata?.uid) s.sourceUID = vm.metadata.uid;
    if (content?.status) {
      s.virtualMachineSnapshotContentName = content.metadata?.name;
      s.creationTime = content.status.creationTime;
      s.readyToUse = content.status.readyToUse;
      s.error = content.status.error;
      if (s.creationTime === undefined) delete s.creationTime;
      if (s.error === undefined) delete s.error;
    }
    let conds = s.conditions;
    const probe = { ...snap, status: s };
    if (st.deadlineExceeded(probe, nowDate)) {
      s.phase = st.Phase.Failed;
      conds = updateCondition(conds, condition(ConditionType.Failure, true, st.DEADLINE_EXCEEDED, now));
      conds = updateCondition(conds, condition(ConditionType.Progressing, false, 'Operation failed', now));
    } else if (st.isSucceeded(probe) || s.creationTime !== undefined) {
      s.phase = st.Phase.Succeeded;
      conds = updateCondition(conds, condition(ConditionType.Progressing, false, 'Operation complete', now));
      this.snapshotVolumes(s, content);
    } else {
      s.phase = st.Phase.InProgress;
      if (state) {
        conds = updateCondition(
          conds,
          condition(ConditionType.Progressing, state.locked, state.lockMsg, now),
        );
        sourceIndications(s, state);
      } else {
        conds = updateCondition(
          conds,
          condition(ConditionType.Progressing, false, 'Source does not exist', now),
        );
      }
      if (st.isDeleting(snap)) {
        s.phase = st.Phase.Deleting;
        conds = updateCondition(
          conds,
          condition(ConditionType.Progressing, false, 'VM snapshot is deleting', now),
        );
      }
    }
    conds = updateCondition(
      conds,
      s.readyToUse
        ? condition(ConditionType.Ready, true, 'Ready', now)
        : condition(ConditionType.Ready, false, 'Not ready', now),
    );
    if (s.error)
      conds = updateCondition(conds, condition(ConditionType.Progressing, false, 'In error state', now));
    s.conditions = conds;
    if (sameJson(snap.status ?? null, s)) return snap;
    const written = await this.d.client.updateStatus<VirtualMachineSnapshot & Obj>(
      VirtualMachineSnapshotType,
      {
        ...(snap as VirtualMachineSnapshot & Obj),
        status: s,
      },
    );
    return written;
  }

  /** `status.snapshotVolumes`: the VM's volumes included and excluded, and PartialSnapshot. */
  private snapshotVolumes(
    s: VirtualMachineSnapshotStatus,
    content: VirtualMachineSnapshotContent | undefined,
  ): void {
    const vm = content?.spec.source.virtualMachine as VirtualMachine | undefined;
    if (!vm?.spec?.template) return;
    const backed = new Set((content?.spec.volumeBackups ?? []).map((b) => b.volumeName));
    const included: string[] = [];
    const excluded: string[] = [];
    let partial = false;
    for (const v of vm.spec.template.spec?.volumes ?? []) {
      if (backed.has(v.name)) included.push(v.name);
      else {
        excluded.push(v.name);
        if (v.persistentVolumeClaim || v.dataVolume) partial = true;
      }
    }
    s.snapshotVolumes = {
      ...(included.length ? { includedVolumes: included } : {}),
      ...(excluded.length ? { excludedVolumes: excluded } : {}),
    };
    if (partial && !(s.indications ?? []).includes(Indication.PartialSnapshot)) {
      s.indications = [...(s.indications ?? []), Indication.PartialSnapshot];
      s.sourceIndications = [
        ...(s.sourceIndications ?? []),
        { indication: Indication.PartialSnapshot, message: IndicationMessages.PartialSnapshot! },
      ];
    }
  }
}

/** Online, then Paused, GuestAgent (QuiesceTimeout) or NoGuestAgent; none when offline. */
function sourceIndications(s: VirtualMachineSnapshotStatus, state: SourceState): void {
  if (!state.online) {
    delete s.indications;
    delete s.sourceIndications;
    return;
  }
  const set = new Set(s.indications ?? []);
  set.add(Indication.Online);
  if (state.paused) set.add(Indication.Paused);
  else if (state.guestAgent) {
    set.add(Indication.GuestAgent);
    if (s.error?.message?.includes(FREEZE_LIMIT_REACHED)) set.add(Indication.QuiesceTimeout);
  } else set.add(Indication.NoGuestAgent);
  const list = [...set].sort();
  s.indications = list;
  s.sourceIndications = list.map((i) => ({
    indication: i,
    message: IndicationMessages[i] ?? 'Unknown indication',
  }));
}
