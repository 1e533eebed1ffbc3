/**
 * The VirtualMachineClone controller (upstream pkg/virt-controller/watch/clone/clone.go):
 * a clone is a VirtualMachineSnapshot of the source VM (none when the source is a
 * snapshot) and a VirtualMachineRestore of it to a new VM, the restore carrying the
 * clone's patches (clone-patches.ts). The snapshot and restore controllers do the work;
 * this one creates their objects, follows them through the phases SnapshotInProgress,
 * RestoreInProgress, CreatingTargetVM and Succeeded (or Failed), and deletes its temporary
 * snapshot and restore once the target's claims are bound.
 */
import type {
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineCloneStatus,
  VirtualMachineRestore,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from '../../../api/generated/types';
import type { ControllerDeps, KeyReconciler, Lister, ReconcileResult } from '../../common/controller-ports';
import { timestamp } from '../../common/controller-ports';
import { NotFoundError } from '../../runtime/errors';
import { sameJson } from '../../runtime/same-json';
import type { KubeObject } from '../../runtime/types';
import { condition, updateCondition } from '../snapshot/conditions';
import {
  type Pvc,
  VirtualMachineCloneType,
  VirtualMachineRestoreType,
  VirtualMachineSnapshotType,
} from '../snapshot/resources';
import { generatePatches } from './clone-patches';

/** upstream's clone.VirtualMachineClonePhase values. */
export const ClonePhase = {
  Unset: '',
  SnapshotInProgress: 'SnapshotInProgress',
  CreatingTargetVM: 'CreatingTargetVM',
  RestoreInProgress: 'RestoreInProgress',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Unknown: 'Unknown',
} as const;

/** upstream's clone event reasons. */
export const CloneEvent = {
  SnapshotCreated: 'SnapshotCreated',
  SnapshotReady: 'SnapshotReady',
  RestoreCreated: 'RestoreCreated',
  RestoreCreationFailed: 'RestoreCreationFailed',
  RestoreReady: 'RestoreReady',
  TargetVMCreated: 'TargetVMCreated',
  PVCBound: 'PVCBound',
  SnapshotDeleted: 'SnapshotDeleted',
  SnapshotContentInvalid: 'SnapshotContentInvalid',
  SnapshotFailed: 'SnapshotFailed',
  RestoreFailed: 'RestoreFailed',
  SourceDoesNotExist: 'SourceDoesNotExist',
  SourceWithBackendStorageInvalid: 'SourceVMWithBackendStorageInvalid',
} as const;

export interface CloneDeps extends ControllerDeps {
  clones: Lister<VirtualMachineClone>;
  snapshots: Lister<VirtualMachineSnapshot>;
  contents: Lister<VirtualMachineSnapshotContent>;
  restores: Lister<VirtualMachineRestore>;
  vms: Lister<VirtualMachine>;
  claims: Lister<Pvc>;
}

/** The phases a pass acts in (Failed and Unknown are final). */
const ACTIVE = new Set<string>([
  ClonePhase.Unset,
  ClonePhase.SnapshotInProgress,
  ClonePhase.RestoreInProgress,
  ClonePhase.CreatingTargetVM,
  ClonePhase.Succeeded,
]);

type Obj = KubeObject & { metadata: NonNullable<KubeObject['metadata']> };

/** What one pass found (upstream's syncInfoType). */
interface SyncInfo {
  snapshotName?: string;
  snapshotReady?: boolean;
  restoreName?: string;
  restoreReady?: boolean;
  targetVMName?: string;
  targetVMCreated?: boolean;
  pvcBound?: boolean;
  /** Waiting for the source (Progressing False "Pending"). */
  pending?: { event: string; reason: string };
  /** The clone fails (phase Failed). */
  failing?: { event: string; reason: string };
  /** Retried: the status is written, then the reconcile requeued. */
  error?: string;
}

/** The temporary snapshot's and restore's names (upstream's). */
export const tmpSnapshotName = (c: VirtualMachineClone) => `tmp-snapshot-${c.metadata?.uid}`;
export const tmpRestoreName = (c: VirtualMachineClone) => `tmp-restore-${c.metadata?.uid}`;

/** Whether a VM needs backend storage (persistent TPM or EFI), which clones do not carry. */
function needsBackendStorage(vm: VirtualMachine): boolean {
  const d = vm.spec.template?.spec?.domain;
  return Boolean(d?.devices?.tpm?.persistent || d?.firmware?.bootloader?.efi?.persistent);
}

export class VmCloneController implements KeyReconciler {
  constructor(private readonly d: CloneDeps) {}

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const c = this.d.clones.get(key);
    if (!c) return undefined;
    const ns = c.metadata?.namespace ?? '';
    if (c.status?.phase === ClonePhase.Succeeded && c.status.targetName) {
      // upstream: a clone whose target VM is gone goes too.
      if (!this.d.vms.get(`${ns}/${c.status.targetName}`)) {
        if (!c.metadata?.deletionTimestamp)
          await this.d.client
            .delete(VirtualMachineCloneType, c.metadata?.name ?? '', { namespace: ns })
            .catch(ignoreNotFound);
        return undefined;
      }
    }
    const phase = c.status?.phase ?? ClonePhase.Unset;
    if (!ACTIVE.has(phase) || (phase === ClonePhase.Succeeded && !c.status?.restoreName)) return undefined;
    const info = await this.sync(c);
    await this.writeStatus(c, info);
    if (info.error) return { requeueAfterMs: 2000 };
    return undefined;
  }

  private async sync(c: VirtualMachineClone): Promise<SyncInfo> {
    const ns = c.metadata?.namespace ?? '';
    // Admission refuses a clone without a source; one written around it waits here.
    const src = c.spec?.source ?? { kind: '', name: '' };
    const info: SyncInfo = {};
    const phase = c.status?.phase ?? ClonePhase.Unset;
    const early = phase === ClonePhase.Unset || phase === ClonePhase.SnapshotInProgress;
    let snapshotName = c.status?.snapshotName;
    if (src.kind === 'VirtualMachineSnapshot') snapshotName = src.name;
    if (src.kind !== 'VirtualMachine' && src.kind !== 'VirtualMachineSnapshot')
      return { error: `clone ${c.metadata?.name} is defined with an unknown source type ${src.kind}` };
    // The source is looked for until its snapshot is taken (upstream looks in every phase:
    // a source VM deleted after the clone made the finished clone pending again).
    if (early) {
      const found =
        src.kind === 'VirtualMachine'
          ? this.d.vms.get(`${ns}/${src.name}`)
          : this.d.snapshots.get(`${ns}/${src.name}`);
      if (!found)
        return pending(CloneEvent.SourceDoesNotExist, `Source doesnt exist: ${src.kind} ${ns}/${src.name}`);
      if (src.kind === 'VirtualMachine' && needsBackendStorage(found as VirtualMachine))
        return failing(
          CloneEvent.SourceWithBackendStorageInvalid,
          `Clone of source with backendstorage is not supported: VM ${ns}/${src.name}`,
        );
    }

    if (early) {
      if (src.kind === 'VirtualMachine' && !c.status?.snapshotName) {
        try {
          info.snapshotName = await this.createSnapshot(c, src.name);
        } catch (e) {
          return { error: `failed creating snapshot for clone ${c.metadata?.name}: ${(e as Error).message}` };
        }
        return info;
      }
      const snap = this.d.snapshots.get(`${ns}/${snapshotName}`);
      if (!snap)
        return { error: `snapshot ${snapshotName} is not created yet for clone ${c.metadata?.name}` };
      // Not upstream's (it waits on): a snapshot that failed fails the clone.
      if (snap.status?.phase === 'Failed')
        return failing(CloneEvent.SnapshotFailed, `snapshot ${snapshotName} failed`);
      if (!snap.status?.readyToUse) return info;
      const invalid = this.invalidContent(snap);
      if (invalid) return failing(CloneEvent.SnapshotContentInvalid, invalid);
      this.record(
        c,
        CloneEvent.SnapshotReady,
        `snapshot ${snapshotName} for clone ${c.metadata?.name} is ready to use`,
      );
      info.snapshotReady = true;
    }
    if (early || phase === ClonePhase.RestoreInProgress) {
      const snap = this.d.snapshots.get(`${ns}/${snapshotName}`);
      if (!snap)
        return failing(CloneEvent.SnapshotDeleted, `snapshot ${snapshotName} does not exist anymore`);
      if (!c.status?.restoreName) {
        const content = this.content(snap);
        const vm = content?.spec.source.virtualMachine as VirtualMachine | undefined;
        if (!vm) return { ...info, error: 'cannot get VM manifest from snapshot' };
        try {
          info.restoreName = await this.createRestore(c, vm, snapshotName ?? '');
        } catch (e) {
          const msg = `failed creating restore for clone ${c.metadata?.name}: ${(e as Error).message}`;
          this.record(c, CloneEvent.RestoreCreationFailed, msg, 'Warning');
          return { error: msg };
        }
        return info;
      }
      const r = this.d.restores.get(`${ns}/${c.status.restoreName}`);
      if (!r)
        return { error: `restore ${c.status.restoreName} is not created yet for clone ${c.metadata?.name}` };
      const failed = r.status?.conditions?.find((x) => x.type === 'Failure' && x.status === 'True');
      if (failed)
        return failing(CloneEvent.RestoreFailed, `restore ${r.metadata?.name} failed: ${failed.reason}`);
      if (!r.status?.complete) return info;
      this.record(
        c,
        CloneEvent.RestoreReady,
        `restore ${r.metadata?.name} for clone ${c.metadata?.name} is ready to use`,
      );
      info.restoreReady = true;
      info.targetVMName = r.spec.target.name;
    }
    if (phase !== ClonePhase.Succeeded) {
      const target = targetName(c);
      if (!this.d.vms.get(`${ns}/${target}`))
        return { ...info, error: `target VM ${target} is not created yet for clone ${c.metadata?.name}` };
      this.record(c, CloneEvent.TargetVMCreated, `created target VM ${target} for clone ${c.metadata?.name}`);
      info.targetVMCreated = true;
    }
    if (c.status?.restoreName) {
      const r = this.d.restores.get(`${ns}/${c.status.restoreName}`);
      if (!r)
        return {
          ...info,
          error: `restore ${c.status.restoreName} is not created yet for clone ${c.metadata?.name}`,
        };
      for (const vr of r.status?.restores ?? []) {
        const pvc = this.d.claims.get(`${ns}/${vr.persistentVolumeClaim}`);
        if (!pvc)
          return {
            ...info,
            error: `PVC ${vr.persistentVolumeClaim} is not created yet for clone ${c.metadata?.name}`,
          };
        // A WaitForFirstConsumer claim binds when the target first starts: cleanup waits.
        if (pvc.status?.phase !== 'Bound') return info;
      }
      this.record(c, CloneEvent.PVCBound, `all PVC for clone ${c.metadata?.name} are bound`);
      info.pvcBound = true;
      await this.d.client
        .delete(VirtualMachineRestoreType, c.status.restoreName, { namespace: ns })
        .catch(ignoreNotFound);
      if (src.kind === 'VirtualMachine' && c.status.snapshotName)
        await this.d.client
          .delete(VirtualMachineSnapshotType, c.status.snapshotName, { namespace: ns })
          .catch(ignoreNotFound);
    }
    return info;
  }

  /** upstream verifySnapshotContent: every claim-backed volume must have a backup. */
  private invalidContent(snap: VirtualMachineSnapshot): string | undefined {
    const content = this.content(snap);
    if (!content)
      return `snapshot content ${snap.status?.virtualMachineSnapshotContentName} in namespace ${snap.metadata?.namespace} does not exist`;
    const vm = content.spec.source.virtualMachine as VirtualMachine | undefined;
    if (!vm?.spec.template) return undefined;
    if (needsBackendStorage(vm))
      return `Clone of source with backendstorage is not supported: snapshot ${snap.metadata?.namespace}/${snap.metadata?.name}`;
    const backed = new Set((content.spec.volumeBackups ?? []).map((b) => b.volumeName));
    const missing = (vm.spec.template.spec?.volumes ?? [])
      .filter((v) => (v.persistentVolumeClaim || v.dataVolume) && !backed.has(v.name))
      .map((v) => `volume ${v.name} is not backed up in snapshot ${snap.metadata?.name}`);
    return missing.length ? missing.join('\n') : undefined;
  }

  private content(snap: VirtualMachineSnapshot): VirtualMachineSnapshotContent | undefined {
    const name = snap.status?.virtualMachineSnapshotContentName ?? `vmsnapshot-content-${snap.metadata?.uid}`;
    return this.d.contents.get(`${snap.metadata?.namespace}/${name}`);
  }

  private async createSnapshot(c: VirtualMachineClone, vmName: string): Promise<string> {
    const name = tmpSnapshotName(c);
    const made = await this.createOrKeep(VirtualMachineSnapshotType, {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineSnapshot',
      metadata: { name, namespace: c.metadata?.namespace, ownerReferences: [cloneOwner(c)] },
      spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: vmName } },
    });
    if (made)
      this.record(c, CloneEvent.SnapshotCreated, `created snapshot ${name} for clone ${c.metadata?.name}`);
    return name;
  }

  private async createRestore(
    c: VirtualMachineClone,
    vm: VirtualMachine,
    snapshotName: string,
  ): Promise<string> {
    const name = tmpRestoreName(c);
    const made = await this.createOrKeep(VirtualMachineRestoreType, {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineRestore',
      metadata: { name, namespace: c.metadata?.namespace, ownerReferences: [cloneOwner(c)] },
      spec: {
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: targetName(c) },
        virtualMachineSnapshotName: snapshotName,
        patches: generatePatches(vm, c.spec),
        ...(c.spec.volumeNamePolicy ? { volumeRestorePolicy: c.spec.volumeNamePolicy } : {}),
      },
    });
    if (made)
      this.record(c, CloneEvent.RestoreCreated, `created restore ${name} for clone ${c.metadata?.name}`);
    return name;
  }

  /** Creates `o`; false when it already exists (a retried pass). */
  private async createOrKeep(type: typeof VirtualMachineSnapshotType, o: object): Promise<boolean> {
    try {
      await this.d.client.create(type, o as KubeObject);
      return true;
    } catch (e) {
      if ((e as { code?: number }).code === 409 || /already exists/i.test(String(e))) return false;
      throw e;
    }
  }

  /** upstream updateStatus: conditions by outcome, then the phase steps this pass allows. */
  private async writeStatus(orig: VirtualMachineClone, info: SyncInfo) {
    const c = structuredClone(orig);
    const st: VirtualMachineCloneStatus = c.status ?? {};
    const now = timestamp(this.d.now?.() ?? new Date());
    const conds = (progressing: boolean, pReason: string, ready: boolean, rReason: string) => {
      st.conditions = updateCondition(st.conditions, condition('Progressing', progressing, pReason, now));
      st.conditions = updateCondition(st.conditions, condition('Ready', ready, rReason, now));
    };
    if (info.pending) {
      this.record(c, info.pending.event, info.pending.reason);
      conds(false, 'Pending', false, info.pending.reason);
    } else if (info.failing) {
      this.record(c, info.failing.event, info.failing.reason, 'Warning');
      st.phase = ClonePhase.Failed;
      conds(false, 'Failed', false, info.failing.reason);
    } else {
      conds(true, 'Still processing', false, info.error ?? 'Still processing');
    }
    const is = (p: string) => (st.phase ?? ClonePhase.Unset) === p;
    if (is(ClonePhase.Unset) && !info.pending) st.phase = ClonePhase.SnapshotInProgress;
    if (is(ClonePhase.SnapshotInProgress)) {
      if (info.snapshotName) st.snapshotName = info.snapshotName;
      if (info.snapshotReady) st.phase = ClonePhase.RestoreInProgress;
    }
    if (is(ClonePhase.RestoreInProgress)) {
      if (info.restoreName) st.restoreName = info.restoreName;
      if (info.restoreReady) st.phase = ClonePhase.CreatingTargetVM;
    }
    if (is(ClonePhase.CreatingTargetVM)) {
      if (info.targetVMName) st.targetName = info.targetVMName;
      if (info.targetVMCreated) st.phase = ClonePhase.Succeeded;
    }
    if (is(ClonePhase.Succeeded)) conds(false, 'Ready', true, 'Ready');
    if (info.pvcBound) {
      delete st.snapshotName;
      delete st.restoreName;
    }
    if (sameJson(orig.status ?? null, st)) return;
    await this.d.client.updateStatus(VirtualMachineCloneType, {
      ...(c as VirtualMachineClone & Obj),
      status: st,
    });
  }

  private record(c: VirtualMachineClone, reason: string, msg: string, type: 'Normal' | 'Warning' = 'Normal') {
    this.d.recorder.event(c, type, reason, msg);
  }
}

/** The target VM's name: the spec's (virt-api's mutator names one when it is left out). */
export function targetName(c: VirtualMachineClone): string {
  return c.spec?.target?.name || `clone-${c.spec?.source?.name}-${(c.metadata?.uid ?? '').slice(0, 5)}`;
}

function cloneOwner(c: VirtualMachineClone) {
  return {
    apiVersion: 'clone.kubevirt.io/v1beta1',
    kind: 'VirtualMachineClone',
    name: c.metadata?.name ?? '',
    uid: c.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

const pending = (event: string, reason: string): SyncInfo => ({ pending: { event, reason } });
const failing = (event: string, reason: string): SyncInfo => ({ failing: { event, reason } });

function ignoreNotFound(e: unknown) {
  if (!(e instanceof NotFoundError)) throw e;
}
