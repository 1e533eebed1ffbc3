/**
 * The VMI controller's part of volume hotplug: the attachment pod it renders (owned by
 * the launcher pod, on the VMI's node, mounting only the claim), the hotplug phases it
 * writes (Pending, AttachedToNode; the handler's MountedToPod/Ready kept; Detaching and
 * UnMountedFromPod on removal), and which pods it creates and deletes.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance, VolumeStatus } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import {
  attachmentPodChanges,
  HOTPLUG_VOLUME_ANNOTATION,
  hotplugVolumeStatus,
  renderAttachmentPod,
} from '../../../../src/controllers/virt-controller/vmi/hotplug-attachments';

const hp = { name: 'data', persistentVolumeClaim: { claimName: 'claim1', hotpluggable: true } };
const vmi = (volumes: object[], volumeStatus: VolumeStatus[] = []): VirtualMachineInstance =>
  ({
    metadata: { name: 'vm1', namespace: 'ns', uid: 'vmi-uid' },
    spec: { domain: { devices: {} }, volumes },
    status: { phase: 'Running', nodeName: 'node1', volumeStatus },
  }) as unknown as VirtualMachineInstance;
const launcher = { metadata: { name: 'virt-launcher-vm1-abcde', uid: 'pod-uid' } } as Pod;
const attachment = (phase: string, uid = 'ap-uid', volume = 'data'): Pod =>
  ({
    metadata: { name: 'hp-volume-x', uid, annotations: { [HOTPLUG_VOLUME_ANNOTATION]: volume } },
    status: { phase },
  }) as Pod;

describe('attachment pods', () => {
  it('renders upstream-like hp-volume pods: owned by the launcher, on its node, mounting the claim only', () => {
    const p = renderAttachmentPod(vmi([hp]), launcher, hp, 'img:1', 'Never', false) as unknown as Record<
      string,
      // biome-ignore lint/suspicious/noExplicitAny: a manifest read back
      any
    >;
    expect(p.metadata.name).toMatch(/^hp-volume-[0-9a-f]{5}$/);
    expect(p.metadata.labels).toEqual({
      'kubevirt.io': 'hotplug-disk',
      'kubevirt-ts.io/hotplug-vmi-uid': 'vmi-uid',
    });
    expect(p.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Pod',
        uid: 'pod-uid',
        name: 'virt-launcher-vm1-abcde',
        controller: true,
      }),
    ]);
    expect(
      p.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
    ).toEqual([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }] }]);
    expect(p.spec.volumes).toEqual([{ name: 'hotplug', persistentVolumeClaim: { claimName: 'claim1' } }]);
    expect(p.spec.automountServiceAccountToken).toBe(false);
    expect(p.spec.containers[0].volumeMounts).toEqual([{ name: 'hotplug', mountPath: '/hotplug' }]);
    // A block-mode claim: its device under the pod's own emptyDir (upstream's layout), so
    // the runtime's node for it is in the kubelet's pods directory for virt-handler.
    const block = renderAttachmentPod(vmi([hp]), launcher, hp, 'img:1', 'Never', true) as unknown as {
      spec: { volumes: unknown; containers: { volumeDevices?: unknown; volumeMounts?: unknown }[] };
    };
    expect(block.spec.volumes).toEqual([
      { name: 'hotplug', persistentVolumeClaim: { claimName: 'claim1' } },
      { name: 'hotplug-disks', emptyDir: {} },
    ]);
    expect(block.spec.containers[0]?.volumeDevices).toEqual([
      { name: 'hotplug', devicePath: '/path/data/disk' },
    ]);
    expect(block.spec.containers[0]?.volumeMounts).toEqual([{ name: 'hotplug-disks', mountPath: '/path' }]);
  });

  it('moves a volume Pending -> AttachedToNode with its pod, and keeps the handler phases', () => {
    const base = [{ name: 'data', target: '' }];
    expect(hotplugVolumeStatus(vmi([hp]), [], base)[0]).toMatchObject({ phase: 'Pending' });
    expect(hotplugVolumeStatus(vmi([hp]), [attachment('Pending')], base)[0]).toMatchObject({
      phase: 'Pending',
      hotplugVolume: { attachPodName: 'hp-volume-x', attachPodUID: 'ap-uid' },
    });
    expect(hotplugVolumeStatus(vmi([hp]), [attachment('Running')], base)[0]).toMatchObject({
      phase: 'AttachedToNode',
    });
    // What the handler said about an attached volume it cannot go on with is kept; a new pod resets it.
    const refused = {
      name: 'data',
      target: '',
      phase: 'AttachedToNode',
      reason: 'BlockHotplugNotSupported',
      message: 'Volume data: no',
      hotplugVolume: { attachPodUID: 'ap-uid' },
    };
    expect(hotplugVolumeStatus(vmi([hp], [refused]), [attachment('Running')], base)[0]).toMatchObject({
      phase: 'AttachedToNode',
      reason: 'BlockHotplugNotSupported',
      message: 'Volume data: no',
    });
    expect(hotplugVolumeStatus(vmi([hp], [refused]), [attachment('Running', 'ap2')], base)[0]).toMatchObject({
      phase: 'AttachedToNode',
      reason: 'SuccessfulCreate',
    });
    const mounted = { name: 'data', target: '', phase: 'Ready', hotplugVolume: { attachPodUID: 'ap-uid' } };
    expect(hotplugVolumeStatus(vmi([hp], [mounted]), [attachment('Running')], base)[0]?.phase).toBe('Ready');
  });

  it('detaches a removed volume: Detaching while mounted, its pod deleted once unmounted, then the entry goes', () => {
    const ready = { name: 'data', target: '', phase: 'Ready', hotplugVolume: { attachPodUID: 'ap-uid' } };
    const pods = [attachment('Running')];
    const s1 = hotplugVolumeStatus(vmi([], [ready]), pods, []);
    expect(s1).toMatchObject([{ name: 'data', phase: 'Detaching' }]);
    expect(attachmentPodChanges(vmi([], [ready]), pods, s1).remove).toEqual([]);
    const unmounted = { ...ready, phase: 'UnMountedFromPod' };
    const s2 = hotplugVolumeStatus(vmi([], [unmounted]), pods, []);
    expect(s2).toMatchObject([{ name: 'data', phase: 'UnMountedFromPod' }]);
    expect(attachmentPodChanges(vmi([], [unmounted]), pods, s2).remove).toEqual(pods);
    expect(hotplugVolumeStatus(vmi([], [unmounted]), [], [])).toEqual([]);
  });

  it('creates one pod per hotplug volume without one', () => {
    const s = hotplugVolumeStatus(vmi([hp]), [], [{ name: 'data', target: '' }]);
    expect(attachmentPodChanges(vmi([hp]), [], s).create).toEqual([hp]);
    expect(attachmentPodChanges(vmi([hp]), [attachment('Pending')], s).create).toEqual([]);
  });

  it('brings a memory dump volume to the node too: its pod mounts the claim, its status names the claim, the dump phases are kept', () => {
    const md = { name: 'dump', memoryDump: { claimName: 'dump', hotpluggable: true } };
    const base = [{ name: 'dump', target: '' }];
    const s = hotplugVolumeStatus(vmi([md]), [], base);
    expect(s[0]).toMatchObject({ phase: 'Pending', memoryDumpVolume: { claimName: 'dump' } });
    expect(attachmentPodChanges(vmi([md]), [], s).create).toEqual([md]);
    const pod = renderAttachmentPod(vmi([md]), launcher, md, 'img', 'Never', false) as unknown as {
      spec: { volumes: unknown[] };
    };
    expect(pod.spec.volumes).toEqual([{ name: 'hotplug', persistentVolumeClaim: { claimName: 'dump' } }]);
    const inProgress = {
      name: 'dump',
      target: '',
      phase: 'MemoryDumpInProgress',
      hotplugVolume: { attachPodUID: 'ap-uid' },
      memoryDumpVolume: { claimName: 'dump', targetFileName: 'f.memory.dump' },
    };
    const kept = hotplugVolumeStatus(
      vmi([md], [inProgress]),
      [attachment('Running', 'ap-uid', 'dump')],
      [inProgress],
    );
    expect(kept[0]).toMatchObject({
      phase: 'MemoryDumpInProgress',
      memoryDumpVolume: { targetFileName: 'f.memory.dump' },
    });
    // Taken out of the spec after the dump: Detaching until the handler unmounted it.
    const done = { ...inProgress, phase: 'MemoryDumpCompleted' };
    expect(hotplugVolumeStatus(vmi([], [done]), [attachment('Running', 'ap-uid', 'dump')], [])).toMatchObject(
      [{ name: 'dump', phase: 'Detaching' }],
    );
  });
});
