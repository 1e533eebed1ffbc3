/**
 * The VMI controller's attachment pod creation (virt-controller/vmi/attachment-pods.ts):
 * no pod while the claim is unknown (its volume mode decides the pod's layout), a
 * filesystem claim mounted, a block-mode claim mapped as a device, with a stub client.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance, VolumeStatus } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { AttachmentPods } from '../../../../src/controllers/virt-controller/vmi/attachment-pods';

const hp = { name: 'data', persistentVolumeClaim: { claimName: 'claim1', hotpluggable: true } };
const vmi = {
  metadata: { name: 'vm1', namespace: 'ns', uid: 'vmi-uid' },
  spec: { domain: { devices: {} }, volumes: [hp] },
  status: { phase: 'Running', nodeName: 'node1', volumeStatus: [] },
} as unknown as VirtualMachineInstance;
const launcher = { metadata: { name: 'virt-launcher-vm1-abcde', uid: 'pod-uid' } } as Pod;

function controller() {
  const created: Pod[] = [];
  const pods = new AttachmentPods({
    client: { create: async (_t: unknown, p: Pod) => void created.push(p) } as never,
    recorder: { event: () => {} } as never,
    podOptions: { launcherImage: 'img:1' } as never,
    config: () => ({ configuration: {} }),
  });
  return { pods, created };
}
const base = (volumeMode?: string): VolumeStatus[] => [
  {
    name: 'data',
    target: '',
    ...(volumeMode ? { persistentVolumeClaimInfo: { claimName: 'claim1', volumeMode } } : {}),
  } as VolumeStatus,
];

describe('AttachmentPods.sync', () => {
  it('waits for the claim, then renders the pod for its volume mode', async () => {
    const a = controller();
    await a.pods.sync(vmi, launcher, [], base());
    expect(a.created).toEqual([]);
    await a.pods.sync(vmi, launcher, [], base('Block'));
    expect(a.created).toHaveLength(1);
    const c = (a.created[0] as unknown as { spec: { containers: Record<string, unknown>[] } }).spec
      .containers[0];
    expect(c?.volumeDevices).toEqual([{ name: 'hotplug', devicePath: '/path/data/disk' }]);
    const b = controller();
    await b.pods.sync(vmi, launcher, [], base('Filesystem'));
    const f = (b.created[0] as unknown as { spec: { containers: Record<string, unknown>[] } }).spec
      .containers[0];
    expect(f?.volumeDevices).toBeUndefined();
    expect(f?.volumeMounts).toEqual([{ name: 'hotplug', mountPath: '/hotplug' }]);
  });

  it('a volume removed and added again within the create grace gets a new pod', async () => {
    const a = controller();
    await a.pods.sync(vmi, launcher, [], base('Filesystem'));
    expect(a.created).toHaveLength(1);
    // The cache shows the pod (the memo of its creation goes), then the volume leaves the
    // spec and its pod goes, then the volume comes back: a second pod at once.
    const first = { ...a.created[0], status: { phase: 'Running' } } as Pod;
    await a.pods.sync(vmi, launcher, [first], base('Filesystem'));
    await a.pods.sync(vmi, launcher, [], base('Filesystem'));
    expect(a.created).toHaveLength(2);
  });
});
