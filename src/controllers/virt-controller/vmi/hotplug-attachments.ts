/**
 * Volume hotplug in the VMI controller (upstream's attachment pods, `hp-volume-*`): each
 * hotpluggable PVC or DataVolume volume of a running VMI gets a pod owned by the launcher
 * pod, on the VMI's node, that only mounts the claim, so the kubelet attaches and mounts it
 * there; virt-handler then hands the disk into the launcher pod. `status.volumeStatus`
 * follows upstream's hotplug phases: Pending (no attachment pod running yet),
 * AttachedToNode (it runs), then the handler's MountedToPod and Ready; a volume taken out
 * of the spec goes Detaching until the handler reports UnMountedFromPod, and its pod is
 * deleted; the entry goes with the pod. One pod per volume (upstream: one per set).
 */
import { randomBytes } from 'node:crypto';
import type { VirtualMachineInstance, Volume, VolumeStatus } from '../../../api/generated/types';
import type { Pod } from '../../common/pod';

/** The label upstream's attachment pods carry (`kubevirt.io: hotplug-disk`). */
export const ATTACHMENT_POD_SELECTOR = 'kubevirt.io=hotplug-disk';
/** Which VMI (uid) an attachment pod serves. */
export const HOTPLUG_VMI_UID_LABEL = 'kubevirt-ts.io/hotplug-vmi-uid';
/** Which VMI (name) and volume an attachment pod serves. */
export const HOTPLUG_VMI_ANNOTATION = 'kubevirt-ts.io/hotplug-vmi';
export const HOTPLUG_VOLUME_ANNOTATION = 'kubevirt-ts.io/hotplug-volume';

/** Upstream's hotplug volume phases. */
export const HotplugPhase = {
  Pending: 'Pending',
  AttachedToNode: 'AttachedToNode',
  MountedToPod: 'MountedToPod',
  Ready: 'Ready',
  Detaching: 'Detaching',
  UnMountedFromPod: 'UnMountedFromPod',
} as const;

/**
 * Phases the node agent sets once the volume is in the launcher pod (a disk; a memory
 * dump volume's directory: virt-handler's memory-dump-volumes.ts).
 */
const HANDLER_OWNED = new Set<string>([
  HotplugPhase.MountedToPod,
  HotplugPhase.Ready,
  'MemoryDumpInProgress',
  'MemoryDumpCompleted',
  'MemoryDumpFailed',
]);

const claimOf = (v: Volume) =>
  v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name ?? v.memoryDump?.claimName;

/**
 * The volumes of a spec that an attachment pod brings to the node: hotpluggable PVC and
 * DataVolume volumes, and memory dump volumes (upstream: hotpluggable too).
 */
export const hotplugVolumes = (vmi: VirtualMachineInstance): Volume[] =>
  (vmi.spec.volumes ?? []).filter(
    (v) => v.persistentVolumeClaim?.hotpluggable || v.dataVolume?.hotpluggable || v.memoryDump,
  );

/**
 * A block-mode claim's device in its attachment pod, as upstream lays it out: under the
 * pod's own `hotplug-disks` emptyDir, so the node the runtime makes for it lands in the
 * kubelet's pods directory, where virt-handler reads its numbers (its hotplug-block.ts
 * looks for the only block device in `hotplug-disks/<volume>/`).
 */
export const ATTACHMENT_EMPTY_DIR = 'hotplug-disks';
const ATTACHMENT_DIR_PATH = '/path';
export const attachmentDevicePath = (volume: string) => `${ATTACHMENT_DIR_PATH}/${volume}/disk`;

const volumeOfPod = (p: Pod) => p.metadata?.annotations?.[HOTPLUG_VOLUME_ANNOTATION];
const live = (p: Pod) => !p.metadata?.deletionTimestamp;

/** The attachment pod of volume `v` of `vmi`, next to its `launcher` pod. */
export function renderAttachmentPod(
  vmi: VirtualMachineInstance,
  launcher: Pod,
  v: Volume,
  image: string,
  pullPolicy: string,
  block: boolean,
): Pod {
  const claimName = claimOf(v) ?? '';
  const node = vmi.status?.nodeName ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `hp-volume-${randomBytes(3).toString('hex').slice(0, 5)}`,
      namespace: vmi.metadata?.namespace,
      labels: { 'kubevirt.io': 'hotplug-disk', [HOTPLUG_VMI_UID_LABEL]: vmi.metadata?.uid ?? '' },
      annotations: {
        [HOTPLUG_VMI_ANNOTATION]: vmi.metadata?.name ?? '',
        [HOTPLUG_VOLUME_ANNOTATION]: v.name,
      },
      // Gone with the launcher pod (upstream: owned by it).
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          name: launcher.metadata?.name ?? '',
          uid: launcher.metadata?.uid ?? '',
          controller: true,
        },
      ],
    },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      automountServiceAccountToken: false,
      // The VMI's node, through the scheduler (a WaitForFirstConsumer claim binds there).
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }],
          },
        },
      },
      tolerations: [{ operator: 'Exists' }],
      securityContext: { runAsUser: 107, runAsGroup: 107, runAsNonRoot: true },
      volumes: [
        { name: 'hotplug', persistentVolumeClaim: { claimName } },
        ...(block ? [{ name: ATTACHMENT_EMPTY_DIR, emptyDir: {} }] : []),
      ],
      containers: [
        {
          name: 'hotplug-disk',
          image,
          imagePullPolicy: pullPolicy,
          command: ['/bin/busybox', 'sleep', '2147483647'],
          resources: {
            requests: { cpu: '10m', memory: '16Mi' },
            limits: { cpu: '100m', memory: '16Mi' },
          },
          securityContext: { capabilities: { drop: ['ALL'] } },
          ...(block
            ? {
                volumeDevices: [{ name: 'hotplug', devicePath: attachmentDevicePath(v.name) }],
                volumeMounts: [{ name: ATTACHMENT_EMPTY_DIR, mountPath: ATTACHMENT_DIR_PATH }],
              }
            : { volumeMounts: [{ name: 'hotplug', mountPath: '/hotplug' }] }),
        },
      ],
    },
  } as unknown as Pod;
}

/**
 * `status.volumeStatus` with the hotplug fields: `base` (the spec's volumes, as
 * nextVolumeStatus keeps them) with each hotplug volume's attachment pod and phase, plus
 * the entries of volumes taken out of the spec that are still being detached.
 */
export function hotplugVolumeStatus(
  vmi: VirtualMachineInstance,
  attachments: Pod[],
  base: VolumeStatus[],
): VolumeStatus[] {
  const old = new Map((vmi.status?.volumeStatus ?? []).map((s) => [s.name, s]));
  const hot = new Set(hotplugVolumes(vmi).map((v) => v.name));
  const podFor = (name: string) => attachments.find((p) => volumeOfPod(p) === name && live(p));
  const out = base.map((s) => {
    if (!hot.has(s.name)) return s;
    const pod = podFor(s.name);
    const prev = old.get(s.name);
    const next: VolumeStatus = { ...s };
    // upstream's VMI controller: a memory dump volume's status says which claim it dumps to.
    const v = vmi.spec.volumes?.find((x) => x.name === s.name);
    if (v?.memoryDump && !next.memoryDumpVolume) next.memoryDumpVolume = { claimName: v.name };
    next.hotplugVolume = pod
      ? { attachPodName: pod.metadata?.name, attachPodUID: pod.metadata?.uid }
      : (prev?.hotplugVolume ?? {});
    if (
      prev &&
      HANDLER_OWNED.has(prev.phase ?? '') &&
      pod?.metadata?.uid === prev.hotplugVolume?.attachPodUID
    )
      return { ...next, phase: prev.phase, reason: prev.reason, message: prev.message };
    if (pod?.status?.phase === 'Running') {
      next.phase = HotplugPhase.AttachedToNode;
      // The handler may have said why it cannot go on (BlockHotplugNotSupported): kept.
      if (
        prev?.phase === HotplugPhase.AttachedToNode &&
        prev.hotplugVolume?.attachPodUID === pod.metadata?.uid
      )
        return { ...next, reason: prev.reason, message: prev.message };
      next.reason = 'SuccessfulCreate';
      next.message = `Created hotplug attachment pod ${pod.metadata?.name}, for volume ${s.name}`;
    } else {
      next.phase = HotplugPhase.Pending;
      next.reason = 'AttachmentPodPending';
      next.message = pod
        ? `Waiting for attachment pod ${pod.metadata?.name} to run`
        : 'Waiting for the attachment pod';
    }
    return next;
  });
  const names = new Set(out.map((s) => s.name));
  for (const prev of vmi.status?.volumeStatus ?? []) {
    if (names.has(prev.name) || !prev.hotplugVolume) continue;
    const pods = attachments.filter((p) => volumeOfPod(p) === prev.name);
    const mounted = HANDLER_OWNED.has(prev.phase ?? '') || prev.phase === HotplugPhase.Detaching;
    // Never mounted, or the handler has unmounted it: only its pod is left to go.
    if (!mounted && pods.length === 0) continue;
    out.push({
      ...prev,
      phase: mounted ? HotplugPhase.Detaching : HotplugPhase.UnMountedFromPod,
      reason: mounted ? 'VolumeDetaching' : 'VolumeUnMounted',
      message: mounted
        ? `Detaching volume ${prev.name} from the guest`
        : `Volume ${prev.name} unmounted; deleting its attachment pod`,
    });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Attachment pods to create (volumes without one) and to delete (volumes gone and unmounted). */
export function attachmentPodChanges(
  vmi: VirtualMachineInstance,
  attachments: Pod[],
  status: VolumeStatus[],
): { create: Volume[]; remove: Pod[] } {
  const hot = hotplugVolumes(vmi);
  const names = new Set(hot.map((v) => v.name));
  const phase = new Map(status.map((s) => [s.name, s.phase]));
  const create = hot.filter((v) => !attachments.some((p) => volumeOfPod(p) === v.name && live(p)));
  const remove = attachments.filter((p) => {
    const name = volumeOfPod(p) ?? '';
    if (!live(p) || names.has(name)) return false;
    const ph = phase.get(name);
    return ph === undefined || ph === HotplugPhase.UnMountedFromPod;
  });
  return { create, remove };
}
