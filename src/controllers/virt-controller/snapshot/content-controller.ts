/**
 * The VirtualMachineSnapshotContent controller (upstream updateVMSnapshotContent): creates
 * one CSI VolumeSnapshot per volume backup (owned by the content, with the
 * VolumeSnapshotClass of the claim's StorageClass), freezing a running source with a guest
 * agent before the first one and thawing it as soon as every VolumeSnapshot has a
 * creationTime (not when they are ready: cutting the snapshot is what needs the freeze);
 * mirrors their state into the content's status; lets go of the content (finalizer)
 * when its snapshot is gone, deleted or failed.
 */
import type {
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
  VirtualMachineSnapshotContentStatus,
} from '../../../api/generated/types';
import type { KeyReconciler, ReconcileResult } from '../../common/controller-ports';
import { timestamp } from '../../common/controller-ports';
import { controllerRef } from '../../common/owner-ref';
import { sameJson } from '../../runtime/same-json';
import type { KubeObject } from '../../runtime/types';
import { FREEZE_LIMIT_REACHED } from './conditions';
import { VirtualMachineSnapshotContentType, type VolumeSnapshot, VolumeSnapshotType } from './resources';
import { claimSnapshotClass, type SnapshotDeps, SnapshotEventReason } from './snapshot-controller';
import * as st from './snapshot-state';
import { sourceState, type VmiFreezer } from './source';

export interface ContentDeps extends SnapshotDeps {
  /** Freezes a running source with a guest agent (none: such sources are not frozen). */
  freezer?: VmiFreezer;
}

type Obj = KubeObject & { metadata: NonNullable<KubeObject['metadata']> };

export class VmSnapshotContentController implements KeyReconciler {
  constructor(private readonly d: ContentDeps) {}

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    let content = this.d.contents.get(key);
    if (!content) return undefined;
    const ns = content.metadata?.namespace ?? '';
    const now = this.now();
    const snapName = content.spec.virtualMachineSnapshotName;
    const snap = snapName ? this.d.snapshots.get(`${ns}/${snapName}`) : undefined;
    if (!snap || st.isTerminating(snap, now)) {
      await this.unfreeze(snap).catch(() => undefined);
      const f = content.metadata?.finalizers ?? [];
      if (f.includes(st.CONTENT_FINALIZER)) {
        content = await this.d.client.update<VirtualMachineSnapshotContent & Obj>(
          VirtualMachineSnapshotContentType,
          {
            ...(content as VirtualMachineSnapshotContent & Obj),
            metadata: { ...content.metadata, finalizers: f.filter((x) => x !== st.CONTENT_FINALIZER) },
          },
        );
      }
      if (snap && st.shouldDeleteContent(snap, content)) {
        // The VolumeSnapshots go with the content (its children; deleted here too so an
        // embedded store without a garbage collector is left clean as well).
        await this.deleteVolumeSnapshots(content);
        return undefined;
      }
    }
    if (content.metadata?.deletionTimestamp) return { requeueAfterMs: 5000 };

    const status: VirtualMachineSnapshotContentStatus = structuredClone(content.status ?? {});
    const created = st.contentCreated(content);
    const statuses: NonNullable<VirtualMachineSnapshotContentStatus['volumeSnapshotStatus']> = [];
    const deleted: string[] = [];
    const skipped: string[] = [];
    let froze = false;
    for (const b of content.spec.volumeBackups ?? []) {
      const vsName = b.volumeSnapshotName;
      if (!vsName) continue;
      let vs = this.d.volumeSnapshots.get(`${ns}/${vsName}`);
      if (!vs) {
        if (created) {
          this.d.recorder.event(
            content,
            'Warning',
            SnapshotEventReason.VolumeSnapshotMissing,
            `VolumeSnapshot ${vsName} no longer exists`,
          );
          deleted.push(vsName);
          continue;
        }
        if (!snap || st.isDeleting(snap)) {
          skipped.push(vsName);
          continue;
        }
        if (!froze) {
          try {
            await this.freeze(snap);
          } catch (e) {
            status.error = { time: timestamp(now), message: (e as Error).message };
            status.readyToUse = false;
            await this.writeStatus(content, status);
            return { requeueAfterMs: 5000 };
          }
          froze = true;
        }
        vs = await this.createVolumeSnapshot(content, b);
      }
      statuses.push({
        volumeSnapshotName: vsName,
        ...(vs.status?.readyToUse !== undefined ? { readyToUse: vs.status.readyToUse } : {}),
        ...(vs.status?.creationTime ? { creationTime: vs.status.creationTime } : {}),
        ...(vs.status?.error ? { error: vs.status.error } : {}),
      });
    }
    let allCreated = true;
    let ready = true;
    let errorMessage = '';
    if (deleted.length) {
      allCreated = ready = false;
      errorMessage = `VolumeSnapshots (${deleted.join(',')}) missing`;
    } else if (skipped.length) {
      allCreated = ready = false;
      errorMessage = `VolumeSnapshots (${skipped.join(',')}) skipped because vm snapshot is deleted`;
    } else {
      for (const v of statuses) {
        if (!v.creationTime) allCreated = false;
        if (!v.readyToUse) ready = false;
        if (v.error?.message) {
          errorMessage = `VolumeSnapshot ${v.volumeSnapshotName} error: ${v.error.message}`;
          break;
        }
      }
    }
    if (allCreated && !status.creationTime) {
      status.creationTime = timestamp(now);
      try {
        await this.unfreeze(snap);
      } catch (e) {
        if (!(e as Error).message.includes(FREEZE_LIMIT_REACHED)) throw e;
        delete status.creationTime;
        status.error = { time: timestamp(now), message: (e as Error).message };
        await this.writeStatus(content, status);
        return { requeueAfterMs: 5000 };
      }
    }
    if (errorMessage && !ready) {
      if (status.error?.message !== errorMessage)
        status.error = { time: timestamp(now), message: errorMessage };
    } else if (!errorMessage) delete status.error;
    status.readyToUse = ready;
    status.volumeSnapshotStatus = statuses;
    await this.writeStatus(content, status);
    return undefined;
  }

  private async deleteVolumeSnapshots(content: VirtualMachineSnapshotContent): Promise<void> {
    const ns = content.metadata?.namespace ?? '';
    for (const b of content.spec.volumeBackups ?? []) {
      if (!b.volumeSnapshotName || !this.d.volumeSnapshots.get(`${ns}/${b.volumeSnapshotName}`)) continue;
      await this.d.client
        .delete(VolumeSnapshotType, b.volumeSnapshotName, { namespace: ns })
        .catch(() => undefined);
    }
  }

  private async writeStatus(
    content: VirtualMachineSnapshotContent,
    status: VirtualMachineSnapshotContentStatus,
  ) {
    if (sameJson(content.status ?? null, status)) return;
    await this.d.client.updateStatus(VirtualMachineSnapshotContentType, {
      ...(content as VirtualMachineSnapshotContent & Obj),
      status,
    });
  }

  private source(snap: VirtualMachineSnapshot) {
    const ns = snap.metadata?.namespace ?? '';
    const vm = this.d.vms.get(`${ns}/${snap.spec.source.name}`);
    if (!vm) return undefined;
    const vmi = this.d.vmis.get(`${ns}/${vm.metadata?.name}`);
    return { vm, state: sourceState(vm, vmi, snap) };
  }

  /** upstream Freeze: a locked, running, unpaused source with a guest agent. */
  private async freeze(snap: VirtualMachineSnapshot): Promise<void> {
    const src = this.source(snap);
    if (!src) throw new Error('unable to get snapshot source');
    const { vm, state } = src;
    if (!state.locked) throw new Error('attempting to freeze unlocked VM');
    if (state.frozen || state.paused || !state.guestAgent || !this.d.freezer) return;
    await this.d.freezer.freeze(
      vm.metadata?.namespace ?? '',
      vm.metadata?.name ?? '',
      st.failureDeadlineMs(snap),
    );
  }

  private async unfreeze(snap: VirtualMachineSnapshot | undefined): Promise<void> {
    if (!snap || !this.d.freezer) return;
    const src = this.source(snap);
    if (!src?.state.locked || !src.state.guestAgent || src.state.paused) return;
    await this.d.freezer.unfreeze(src.vm.metadata?.namespace ?? '', src.vm.metadata?.name ?? '');
  }

  private async createVolumeSnapshot(
    content: VirtualMachineSnapshotContent,
    b: NonNullable<VirtualMachineSnapshotContent['spec']['volumeBackups']>[number],
  ): Promise<VolumeSnapshot> {
    const claim = b.persistentVolumeClaim;
    const sc = claim.spec?.storageClassName;
    const name = `${content.metadata?.namespace}/${claim.metadata?.name}`;
    if (!sc) throw new Error(`${name} VolumeSnapshot requested but no storage class`);
    const cls = claimSnapshotClass(this.d, { spec: { storageClassName: sc } });
    if (!cls) throw new Error(`${name}: no VolumeSnapshotClass for StorageClass ${sc}`);
    const vm = content.spec.source.virtualMachine;
    const vs = {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: {
        name: b.volumeSnapshotName,
        namespace: content.metadata?.namespace,
        labels: {
          [st.SOURCE_NAME_LABEL]: vm?.metadata?.name ?? '',
          [st.SOURCE_NAMESPACE_LABEL]: vm?.metadata?.namespace ?? '',
        },
        ownerReferences: [
          controllerRef('snapshot.kubevirt.io/v1beta1', 'VirtualMachineSnapshotContent', content),
        ],
      },
      spec: { source: { persistentVolumeClaimName: claim.metadata?.name }, volumeSnapshotClassName: cls },
    };
    const made = await this.d.client.create<VolumeSnapshot & KubeObject>(VolumeSnapshotType, vs as never);
    this.d.recorder.event(
      content,
      'Normal',
      SnapshotEventReason.VolumeSnapshotCreate,
      `Successfully created VolumeSnapshot ${vs.metadata.name}`,
    );
    return made;
  }
}
