/**
 * The VMI controller (upstream pkg/virt-controller/watch/vmi): renders and creates the
 * launcher pod of each VMI, moves the VMI through Pending, Scheduling and Scheduled as the
 * pod progresses, fails it when the pod fails or vanishes, deletes the pod when the VMI is
 * final or being deleted, and removes the VMI finalizer once no pod is left.
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { Finalizers } from '../../../api/labels';
import {
  type ControllerDeps,
  type Expectations,
  type KeyReconciler,
  type Lister,
  type PodsByVmi,
  type ReconcileResult,
  timestamp,
} from '../../common/controller-ports';
import type { Pod } from '../../common/pod';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, InvalidError, NotFoundError } from '../../runtime/errors';
import { objectKey, PodType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import { missingNetworkAttachment, type NetworkAttachmentDefinition } from '../services/network-attachments';
import { type LauncherPodOptions, PodRenderError, renderLauncherPod } from '../services/pod-renderer';
import { blockVolumeNames, type Claim, missingClaim, nextVolumeStatus } from '../services/volumes';
import { AttachmentPods } from './attachment-pods';
import { podDownOrGoingDown } from './pod-state';
import { isFinalPhase, nextVmiStatus, VmiPhase, withoutLauncherImage } from './status';
import { unpausedConditionPatch } from './unpaused-condition';
import { vmiPatch } from './vmi-patch';

/** Event reasons of the VMI controller (upstream values). */
export const VmiEventReason = {
  SuccessfulCreate: 'SuccessfulCreate',
  FailedCreate: 'FailedCreate',
  SuccessfulDelete: 'SuccessfulDelete',
  FailedDelete: 'FailedDelete',
} as const;

export interface VmiControllerDeps extends ControllerDeps {
  vmis: Lister<VirtualMachineInstance>;
  pods: PodsByVmi<Pod>;
  expectations: Expectations;
  config: () => ClusterConfig;
  podOptions: LauncherPodOptions;
  /** PersistentVolumeClaims, when watched: a VMI waits for its claims to exist. */
  claims?: Lister<Claim>;
  /** Hotplug attachment pods by VMI uid, when watched (volume hotplug: ./hotplug-attachments). */
  attachments?: PodsByVmi<Pod>;
  /** NetworkAttachmentDefinitions, when watched: a VMI's multus networks must exist for its pod. */
  nads?: Lister<NetworkAttachmentDefinition>;
  /** Called with the VMI written by this controller (tests count writes through it). */
  onWrite?: (kind: 'VirtualMachineInstance' | 'Pod', verb: 'create' | 'update' | 'patch' | 'delete') => void;
}

const byNewest = (a: Pod, b: Pod) =>
  String(b.metadata?.creationTimestamp ?? '').localeCompare(String(a.metadata?.creationTimestamp ?? ''));

/**
 * The VMI's current launcher pod: the one on the VMI's node once it has one (after a
 * migration that is the former target pod), else the newest that is not a migration
 * target; pods being deleted only when nothing else is left.
 */
function pickPod(pods: Pod[], nodeName: string | undefined): Pod | undefined {
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const list = live.length ? live : pods;
  if (nodeName) {
    // A VMI migrated back to a node it left has its old, finished pod there too; creation
    // times are to the second, so a finished pod goes last whatever its age.
    const finished = (p: Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
    const onNode = list
      .filter((p) => p.spec?.nodeName === nodeName)
      .sort((a, b) => Number(finished(a)) - Number(finished(b)) || byNewest(a, b))[0];
    if (onNode) return onNode;
  }
  return list.filter((p) => !p.metadata?.labels?.['kubevirt.io/migrationJobUID']).sort(byNewest)[0];
}

/**
 * Reconciles one VirtualMachineInstance (`namespace/name` key): creates its launcher pod,
 * moves it through Pending, Scheduling and Scheduled, and cleans up pods and finalizer.
 */
export class VmiController implements KeyReconciler {
  private readonly hotplug: AttachmentPods;
  /**
   * Per key, the resourceVersion our last write replaced, until the cache shows a newer
   * one: reconciling that older copy (a pod event can come before our write's) would only
   * repeat the write and fail with a conflict; our write's watch event re-queues the key.
   */
  private readonly replaced = new Map<string, string>();

  constructor(private readonly d: VmiControllerDeps) {
    this.hotplug = new AttachmentPods(d);
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const vmi = this.d.vmis.get(key);
    if (!vmi) {
      this.d.expectations.delete(key);
      this.replaced.delete(key);
      return undefined;
    }
    const superseded = this.replaced.get(key);
    if (superseded !== undefined) {
      if (superseded === vmi.metadata?.resourceVersion) return undefined;
      this.replaced.delete(key);
    }
    // Our own pod create/delete is not in the cache yet: acting now would duplicate it.
    if (!this.d.expectations.satisfied(key)) return undefined;

    const uid = vmi.metadata?.uid ?? '';
    const pods = this.d.pods.byVmiUid(uid);
    const pod = pickPod(pods, vmi.status?.nodeName);
    const deleting = vmi.metadata?.deletionTimestamp !== undefined;
    const phase = vmi.status?.phase ?? '';

    // Final, or deleted before a node agent took it: the pods go, then the finalizer.
    const handedToNode = phase === VmiPhase.Scheduled || phase === VmiPhase.Running;
    if (isFinalPhase(phase) || (deleting && !handedToNode)) {
      const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
      if (live.length) {
        await this.deletePods(key, vmi, live);
        if (!isFinalPhase(phase)) await this.writeStatus(vmi, nextVmiStatus({ vmi, pod, now: this.now() }));
        return undefined;
      }
      if (pods.length === 0) {
        let next = vmi;
        if (!isFinalPhase(phase)) {
          next = nextVmiStatus({ vmi, now: this.now() });
        }
        next = withoutLauncherImage(this.withoutFinalizer(next));
        await this.writeStatus(vmi, next);
      }
      return undefined;
    }

    let podJustCreated: Pod | undefined;
    let syncError: { reason: string; message: string } | undefined;
    const missing = this.d.claims
      ? missingClaim(vmi.spec, vmi.metadata?.namespace ?? '', this.d.claims)
      : undefined;
    if (!pod && missing && !deleting) {
      // No pod until the claim exists (upstream's FailedPvcNotFound); its creation re-queues us.
      syncError = { reason: 'FailedPvcNotFound', message: missing };
    } else if (!pod && (phase === '' || phase === VmiPhase.Pending) && !deleting) {
      try {
        podJustCreated = await this.createPod(key, vmi);
      } catch (err) {
        syncError = { reason: VmiEventReason.FailedCreate, message: (err as Error).message };
        this.d.recorder.event(
          vmi,
          'Warning',
          VmiEventReason.FailedCreate,
          `Error creating pod: ${(err as Error).message}`,
        );
      }
    }
    // Only for a running VMI, as upstream syncs it in updateStatus's IsRunning case: before
    // that the pod's conditions are the scheduler's and the kubelet's to write.
    if (pod && phase === VmiPhase.Running && !podDownOrGoingDown(pod))
      await this.syncUnpausedCondition(vmi, pod);
    const launcherImage = this.d.podOptions.launcherImage;
    const next = nextVmiStatus({ vmi, pod, podJustCreated, syncError, launcherImage, now: this.now() });
    if (this.d.claims && next.status) next.status.volumeStatus = nextVolumeStatus(vmi, this.d.claims);
    if (
      this.d.attachments &&
      next.status &&
      pod &&
      phase === VmiPhase.Running &&
      !deleting &&
      !podDownOrGoingDown(pod)
    )
      next.status.volumeStatus = await this.hotplug.sync(
        vmi,
        pod,
        this.d.attachments.byVmiUid(uid),
        next.status.volumeStatus ?? [],
      );
    await this.writeStatus(vmi, next);
    return syncError && !missing ? { requeueAfterMs: 5000 } : undefined;
  }

  /** The pod's readiness-gate condition from the VMI's Paused condition (upstream's syncPausedConditionToPod). */
  private async syncUnpausedCondition(vmi: VirtualMachineInstance, pod: Pod): Promise<void> {
    const ops = unpausedConditionPatch(vmi, pod, this.now());
    if (!ops) return;
    try {
      await this.d.client.patch(PodType, pod.metadata?.name ?? '', ops, {
        namespace: pod.metadata?.namespace,
        type: 'json',
        subresource: 'status',
      });
    } catch (err) {
      // The pod changed (the patch's test failed) or went: its informer event re-queues the VMI.
      if (err instanceof ConflictError || err instanceof NotFoundError || err instanceof InvalidError) return;
      throw err;
    }
  }

  private now(): string {
    return timestamp(this.d.now?.() ?? new Date());
  }

  private async createPod(key: string, vmi: VirtualMachineInstance): Promise<Pod> {
    const nad = this.d.nads ? missingNetworkAttachment(vmi, this.d.nads) : undefined;
    if (nad) throw new PodRenderError(`failed to render launch manifest: ${nad}`);
    const manifest = renderLauncherPod(
      vmi,
      this.d.config(),
      this.d.podOptions,
      blockVolumeNames(vmi, this.d.claims),
    );
    this.d.expectations.expectCreations(key, 1);
    try {
      const created = await this.d.client.create<Pod & { metadata: NonNullable<Pod['metadata']> }>(
        PodType,
        manifest as never,
      );
      this.d.onWrite?.('Pod', 'create');
      this.d.recorder.event(
        vmi,
        'Normal',
        VmiEventReason.SuccessfulCreate,
        `Created virtual machine pod ${created.metadata.name}`,
      );
      return created;
    } catch (err) {
      this.d.expectations.creationObserved(key);
      throw err;
    }
  }

  private async deletePods(key: string, vmi: VirtualMachineInstance, pods: Pod[]): Promise<void> {
    this.d.expectations.expectDeletions(key, pods.length);
    for (const p of pods) {
      try {
        await this.d.client.delete(PodType, p.metadata?.name ?? '', {
          namespace: p.metadata?.namespace,
          preconditions: { uid: p.metadata?.uid },
        });
        this.d.onWrite?.('Pod', 'delete');
        this.d.recorder.event(
          vmi,
          'Normal',
          VmiEventReason.SuccessfulDelete,
          `Deleted virtual machine pod ${p.metadata?.name}`,
        );
      } catch (err) {
        this.d.expectations.deletionObserved(key);
        if (err instanceof NotFoundError) continue;
        this.d.recorder.event(
          vmi,
          'Warning',
          VmiEventReason.FailedDelete,
          `Error deleting pod ${p.metadata?.name}: ${(err as Error).message}`,
        );
        throw err;
      }
    }
  }

  private withoutFinalizer(vmi: VirtualMachineInstance): VirtualMachineInstance {
    const f = vmi.metadata?.finalizers ?? [];
    const keep = f.filter(
      (x) => x !== Finalizers.virtualMachineInstance && x !== Finalizers.deprecatedVirtualMachineInstance,
    );
    if (keep.length === f.length) return vmi;
    return { ...vmi, metadata: { ...vmi.metadata, finalizers: keep } };
  }

  /** Writes the VMI only if status, labels or finalizers changed: one write per transition. */
  private async writeStatus(old: VirtualMachineInstance, next: VirtualMachineInstance): Promise<void> {
    if (
      sameJson(old.status, next.status) &&
      sameJson(old.metadata?.labels, next.metadata?.labels) &&
      sameJson(old.metadata?.finalizers, next.metadata?.finalizers)
    ) {
      return;
    }
    // As upstream: a VMI handed to its node is virt-handler's to update; the controller
    // patches only what it changed, testing those fields (vmi-patch.ts).
    const patched = old.status?.phase === VmiPhase.Scheduled || old.status?.phase === VmiPhase.Running;
    let written: { metadata?: { resourceVersion?: string } } | undefined;
    try {
      if (patched) {
        const ops = vmiPatch(old, next);
        if (!ops.length) return;
        written = await this.d.client.patch(VmiResource, old.metadata?.name ?? '', ops, {
          namespace: old.metadata?.namespace,
          type: 'json',
        });
        this.d.onWrite?.('VirtualMachineInstance', 'patch');
      } else {
        written = await this.d.client.update(VmiResource, next as never);
        this.d.onWrite?.('VirtualMachineInstance', 'update');
      }
      // Only a write the server took as a change (a new version comes through the watch).
      const [was, now] = [old.metadata?.resourceVersion, written?.metadata?.resourceVersion];
      if (was && now && now !== was) this.replaced.set(objectKey(old as never), was);
    } catch (err) {
      // A newer VMI is on its way through the informer; it triggers the next reconcile
      // (a failed patch test is the patch's conflict).
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      if (patched && err instanceof InvalidError) return;
      throw err;
    }
  }
}
