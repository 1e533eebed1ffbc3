/**
 * The VMI controller's status computation, as upstream's updateStatus
 * (pkg/virt-controller/watch/vmi/vmi.go): the next phase, node, conditions and active
 * pods of a VMI from its launcher pod. Pure; the reconciler writes the result only when
 * it differs, so a VMI is written once per real transition.
 */
import { quantityValue } from '../../../api/config/quantity';
import type { VirtualMachineInstance, VirtualMachineInstanceCondition } from '../../../api/generated/types';
import { Labels } from '../../../api/labels';
import {
  AUTO_MIGRATION_DUE_TO_LIVE_UPDATE,
  HOT_MEMORY_CHANGE,
  HOT_VCPU_CHANGE,
  MIGRATION_REQUIRED,
} from '../../common/hotplug-migration';
import type { Pod } from '../../common/pod';
import { isMigrating } from '../../common/vmi-migrating';
import { podNetworksOutdated } from './network-migration';
import {
  imagePullError,
  podCondition,
  podDownOrGoingDown,
  podReadyForVmi,
  unschedulableCondition,
} from './pod-state';

/** VMI phases (upstream VirtualMachineInstancePhase). */
export const VmiPhase = {
  Unset: '',
  Pending: 'Pending',
  Scheduling: 'Scheduling',
  Scheduled: 'Scheduled',
  Running: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Unknown: 'Unknown',
} as const;

/** Reasons of the VMI Ready condition set by the controller (upstream values). */
export const ReadyReason = {
  PodNotExists: 'PodNotExists',
  PodTerminating: 'PodTerminating',
  GuestNotRunning: 'GuestNotRunning',
  PodConditionMissing: 'PodConditionMissing',
} as const;

/** The VMI label carrying its node (upstream NodeNameLabel). */
export const NODE_NAME_LABEL = Labels.nodeName;

export const isFinalPhase = (phase?: string) => phase === VmiPhase.Succeeded || phase === VmiPhase.Failed;
export const isUnprocessed = (phase?: string) => !phase || phase === VmiPhase.Pending;

type Condition = VirtualMachineInstanceCondition;

const vcpus = (t: { sockets?: number; cores?: number; threads?: number }) =>
  (t.sockets || 1) * (t.cores || 1) * (t.threads || 1);

/** upstream requireMemoryHotplug: hotplug headroom (maxGuest) and a guest memory other than requested. */
export function requiresMemoryHotplug(vmi: VirtualMachineInstance): boolean {
  const memory = vmi.spec?.domain?.memory;
  const requested = vmi.status?.memory?.guestRequested;
  if (!memory?.maxGuest || memory.guest === undefined || requested === undefined) return false;
  return quantityValue(memory.guest) !== quantityValue(requested);
}

/** upstream requireCPUHotplug: hotplug headroom (maxSockets) and spec vCPUs other than the guest's. */
export function requiresCpuHotplug(vmi: VirtualMachineInstance): boolean {
  const cpu = vmi.spec?.domain?.cpu;
  const current = vmi.status?.currentCPUTopology;
  if (!cpu?.maxSockets || !current) return false;
  return vcpus(cpu) !== vcpus(current);
}

/** Sets a condition, keeping the old one (and its timestamps) when type, status, reason and message match. */
export function setCondition(conds: Condition[], next: Condition, now: string): Condition[] {
  const i = conds.findIndex((c) => c.type === next.type);
  if (i >= 0) {
    const old = conds[i];
    if (
      old.status === next.status &&
      (old.reason ?? '') === (next.reason ?? '') &&
      (old.message ?? '') === (next.message ?? '')
    ) {
      return conds;
    }
    const out = [...conds];
    out[i] = {
      lastProbeTime: null as unknown as string,
      lastTransitionTime: old.status === next.status ? old.lastTransitionTime : now,
      ...next,
    };
    return out;
  }
  return [...conds, { lastProbeTime: null as unknown as string, lastTransitionTime: now, ...next }];
}

export function removeCondition(conds: Condition[], type: string): Condition[] {
  return conds.some((c) => c.type === type) ? conds.filter((c) => c.type !== type) : conds;
}

/** Input of {@link nextVmiStatus}. */
export interface VmiStatusInput {
  vmi: VirtualMachineInstance;
  /** The VMI's launcher pod (the newest not-deleted one), if any. */
  pod?: Pod;
  /** A pod was just created by this sync (not yet in the informer). */
  podJustCreated?: Pod;
  /** Why the pod could not be created, when it could not. */
  syncError?: { reason: string; message: string };
  /** The launcher image virt-controller installs now: a pod running another is outdated. */
  launcherImage?: string;
  now: string;
}

/**
 * upstream's setLauncherContainerInfo: the image of the pod's `compute` container in
 * `status.launcherContainerImageVersion`, and the `kubevirt.io/outdatedLauncherImage`
 * label while it is not `installed` (the workload updater moves such VMIs).
 */
function setLauncherImage(out: VirtualMachineInstance, pod: Pod, installed: string): void {
  const image = pod.spec?.containers?.find((c) => c.name === 'compute')?.image ?? '';
  const labels = { ...(out.metadata?.labels ?? {}) };
  if (image && image !== installed) labels[Labels.outdatedLauncherImage] = '';
  else delete labels[Labels.outdatedLauncherImage];
  if (Object.keys(labels).length || out.metadata?.labels) out.metadata = { ...out.metadata, labels };
  out.status = out.status ?? {};
  if (image) out.status.launcherContainerImageVersion = image;
  else delete out.status.launcherContainerImageVersion;
}

/** `vmi` without its launcher image record (upstream's, once a final VMI's pods are gone). */
export function withoutLauncherImage(vmi: VirtualMachineInstance): VirtualMachineInstance {
  const labels = vmi.metadata?.labels;
  const hasLabel = labels !== undefined && Labels.outdatedLauncherImage in labels;
  if (!hasLabel && vmi.status?.launcherContainerImageVersion === undefined) return vmi;
  const out = { ...vmi, metadata: { ...vmi.metadata }, status: { ...vmi.status } };
  if (hasLabel) {
    const { [Labels.outdatedLauncherImage]: _gone, ...rest } = labels;
    out.metadata.labels = rest;
  }
  delete out.status.launcherContainerImageVersion;
  return out;
}

/** The new VMI (a copy) with phase, nodeName label, conditions and activePods brought up to date. */
export function nextVmiStatus(input: VmiStatusInput): VirtualMachineInstance {
  const { vmi, now } = input;
  // Only metadata.labels and status change: copy those, share the (read-only) spec.
  const out: VirtualMachineInstance = {
    ...vmi,
    metadata: { ...vmi.metadata, labels: vmi.metadata?.labels && { ...vmi.metadata.labels } },
    status: vmi.status && structuredClone(vmi.status),
  };
  if (out.metadata?.labels === undefined) delete out.metadata?.labels;
  if (out.status === undefined) delete out.status;
  if (!out.status) out.status = {};
  const status = out.status;
  let conds: Condition[] = status.conditions ?? [];
  const pod = input.pod ?? input.podJustCreated;
  const phase = status.phase ?? '';
  const deleting = vmi.metadata?.deletionTimestamp !== undefined;

  if (isUnprocessed(phase)) {
    if (pod) {
      status.phase = VmiPhase.Scheduling;
    } else if (deleting) {
      status.phase = VmiPhase.Failed;
    } else {
      status.phase = VmiPhase.Pending;
    }
  } else if (phase === VmiPhase.Scheduling) {
    if (!pod) {
      // Someone other than the controller deleted the pod.
      status.phase = VmiPhase.Failed;
    } else {
      const unsched = unschedulableCondition(pod);
      if (unsched) {
        conds = setCondition(
          conds,
          { type: 'PodScheduled', status: 'False', reason: unsched.reason, message: unsched.message },
          now,
        );
      } else {
        conds = removeCondition(conds, 'PodScheduled');
      }
      if (podReadyForVmi(pod) && !deleting) {
        status.phase = VmiPhase.Scheduled;
        status.nodeName = pod.spec?.nodeName;
        out.metadata = {
          ...out.metadata,
          labels: { ...(out.metadata?.labels ?? {}), [NODE_NAME_LABEL]: pod.spec?.nodeName ?? '' },
        };
      } else if (podDownOrGoingDown(pod)) {
        status.phase = VmiPhase.Failed;
      }
    }
  } else if (phase === VmiPhase.Scheduled || phase === VmiPhase.Running) {
    if (!pod || pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
      status.phase = VmiPhase.Failed;
      status.reason = pod ? `launcher pod ${pod.status?.phase}` : 'launcher pod disappeared';
    }
  }

  // Synchronized condition: an error creating the pod, or an image pull failure.
  const imageErr = pod ? imagePullError(pod) : undefined;
  const syncErr = input.syncError ?? imageErr;
  if (syncErr && !isFinalPhase(status.phase)) {
    conds = setCondition(
      conds,
      { type: 'Synchronized', status: 'False', reason: syncErr.reason, message: syncErr.message },
      now,
    );
  } else if (conds.some((c) => c.type === 'Synchronized' && c.status === 'False')) {
    conds = removeCondition(conds, 'Synchronized');
  }

  // Ready condition (upstream syncReadyConditionFromPod).
  let ready: Condition;
  if (!pod) {
    ready = {
      type: 'Ready',
      status: 'False',
      reason: ReadyReason.PodNotExists,
      message: 'virt-launcher pod has not yet been scheduled',
    };
  } else if (podDownOrGoingDown(pod)) {
    ready = {
      type: 'Ready',
      status: 'False',
      reason: ReadyReason.PodTerminating,
      message: 'virt-launcher pod is terminating',
    };
  } else if (status.phase !== VmiPhase.Running) {
    ready = {
      type: 'Ready',
      status: 'False',
      reason: ReadyReason.GuestNotRunning,
      message: 'Guest VM is not reported as running',
    };
  } else {
    const pr = podCondition(pod, 'Ready');
    ready = pr
      ? { type: 'Ready', status: pr.status, reason: pr.reason, message: pr.message }
      : {
          type: 'Ready',
          status: 'False',
          reason: ReadyReason.PodConditionMissing,
          message: 'virt-launcher pod is missing the Ready condition',
        };
  }
  if (ready.reason === undefined) delete ready.reason;
  if (ready.message === undefined) delete ready.message;
  conds = setCondition(conds, ready, now);
  // A running VMI whose spec asks for other vCPUs than its guest has: a CPU hotplug is
  // pending (upstream's requireCPUHotplug); the condition stays until virt-handler applied it.
  if (
    status.phase === VmiPhase.Running &&
    requiresCpuHotplug(vmi) &&
    !conds.some((c) => c.type === HOT_VCPU_CHANGE)
  )
    conds = setCondition(conds, { type: HOT_VCPU_CHANGE, status: 'True' }, now);
  // The same for memory (upstream's requireMemoryHotplug): guest memory other than requested.
  if (
    status.phase === VmiPhase.Running &&
    requiresMemoryHotplug(vmi) &&
    !conds.some((c) => c.type === HOT_MEMORY_CHANGE)
  )
    conds = setCondition(conds, { type: HOT_MEMORY_CHANGE, status: 'True' }, now);
  // A pod that cannot give the VMI its secondary networks (a hotplugged NIC): the workload
  // updater migrates it to one that can (upstream's syncMigrationRequiredCondition). A
  // running migration's target pod is rendered from the spec, so it fits: the condition
  // goes with the migration's start (upstream keeps it until the migration ended and its
  // controller evaluated the new pod) and is judged again on the pod the VMI ends up in.
  // A migration that succeeded hands the VMI to its target pod; until the VMI's node says
  // so, `pod` is still the source pod, which lacks the new NIC: judging it then would ask
  // for a second migration (seen on the two-node cluster).
  const handingOver =
    !!vmi.status?.migrationState?.completed &&
    !vmi.status.migrationState.failed &&
    pod?.metadata?.name !== vmi.status.migrationState.targetPod;
  if (isMigrating(vmi)) conds = removeCondition(conds, MIGRATION_REQUIRED);
  else if (status.phase === VmiPhase.Running && pod && !handingOver) {
    const why = podNetworksOutdated(vmi, pod);
    conds = why
      ? setCondition(
          conds,
          {
            type: MIGRATION_REQUIRED,
            status: 'True',
            reason: AUTO_MIGRATION_DUE_TO_LIVE_UPDATE,
            message: why,
          },
          now,
        )
      : removeCondition(conds, MIGRATION_REQUIRED);
  }
  status.conditions = conds;

  // activePods (pod uid -> node) is refreshed with phase changes, and when the VMI's pod is
  // not in it (after a migration handed the VMI to the target pod): upstream rewrites it
  // whenever a pod gets bound, which costs a VMI write that carries no new phase.
  if (pod?.metadata?.uid && (status.phase !== phase || !(pod.metadata.uid in (status.activePods ?? {})))) {
    status.activePods = { [pod.metadata.uid]: pod.spec?.nodeName ?? '' };
  }

  // From Scheduled on, as upstream records it for a VMI on its node: the record rides on the
  // Scheduled transition's write instead of costing one of its own while Scheduling.
  if (
    input.pod &&
    input.launcherImage !== undefined &&
    (status.phase === VmiPhase.Scheduled || status.phase === VmiPhase.Running)
  )
    setLauncherImage(out, input.pod, input.launcherImage);

  // Phase transition timestamps, once per phase.
  if (status.phase && status.phase !== phase) {
    const ts = status.phaseTransitionTimestamps ?? [];
    if (!ts.some((t) => t.phase === status.phase)) {
      status.phaseTransitionTimestamps = [...ts, { phase: status.phase, phaseTransitionTimestamp: now }];
    }
  }
  return out;
}
