/**
 * Claims in the launcher pod and in the VMI's status, as upstream's virt-controller
 * renders them: a `volumeMode: Block` claim as a device at `/dev/<volume>`
 * (addPVCToLaunchManifest), any other as a mount at `<private>/vmi-disks/<volume>`; and
 * `status.volumeStatus` with each claim's info (updateVolumeStatus, processPVCInfo).
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import type { Lister } from '../../../../src/controllers/common/controller-ports';
import { parseLauncherArgs } from '../../../../src/controllers/common/launcher-args';
import { renderLauncherPod } from '../../../../src/controllers/virt-controller/services/pod-renderer';
import {
  blockVolumeNames,
  type Claim,
  nextVolumeStatus,
} from '../../../../src/controllers/virt-controller/services/volumes';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const opts = { launcherImage: 'kubevirt-ts/launcher:dev' };

const vmi = (status?: VirtualMachineInstance['status']): VirtualMachineInstance =>
  ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'ns', uid: 'u-1' },
    spec: {
      domain: {
        resources: { requests: { memory: '128Mi' } },
        devices: { autoattachPodInterface: false, disks: [{ name: 'fs' }, { name: 'blk' }, { name: 'dv' }] },
      },
      volumes: [
        { name: 'fs', persistentVolumeClaim: { claimName: 'fs-claim' } },
        { name: 'blk', persistentVolumeClaim: { claimName: 'blk-claim' } },
        { name: 'dv', dataVolume: { name: 'dv1' } },
        { name: 'cd', containerDisk: { image: 'x' } },
      ],
    },
    ...(status ? { status } : {}),
  }) as VirtualMachineInstance;

const claims: Record<string, Claim> = {
  'ns/fs-claim': {
    metadata: { name: 'fs-claim', namespace: 'ns' },
    spec: {
      accessModes: ['ReadWriteOnce'],
      volumeMode: 'Filesystem',
      resources: { requests: { storage: '1Gi' } },
    },
    status: { phase: 'Bound', capacity: { storage: '2Gi' } },
  },
  'ns/blk-claim': {
    metadata: { name: 'blk-claim', namespace: 'ns' },
    spec: {
      accessModes: ['ReadWriteOnce'],
      volumeMode: 'Block',
      resources: { requests: { storage: '64Mi' } },
    },
    status: { phase: 'Pending' },
  },
  'ns/dv1': {
    metadata: {
      name: 'dv1',
      namespace: 'ns',
      annotations: { 'cdi.kubevirt.io/storage.preallocation': 'true' },
    },
    spec: { resources: { requests: { storage: '1Gi' } } },
  },
};
const lister: Lister<Claim> = {
  get: (k: string) => claims[k],
  list: () => Object.values(claims),
} as Lister<Claim>;

describe('claims of a VMI', () => {
  it('renders block claims as volumeDevices at /dev/<volume> and filesystem claims as mounts', () => {
    const v = vmi();
    expect([...blockVolumeNames(v, lister)]).toEqual(['blk']);
    const pod = renderLauncherPod(v, cfg, opts, blockVolumeNames(v, lister));
    const compute = pod.spec!.containers.find((c) => c.name === 'compute')!;
    expect(compute.volumeDevices).toEqual([{ name: 'blk', devicePath: '/dev/blk' }]);
    const mounts = compute.volumeMounts!.filter((m) => ['fs', 'blk', 'dv'].includes(m.name));
    expect(mounts).toEqual([
      { name: 'fs', mountPath: '/var/run/kubevirt-private/vmi-disks/fs' },
      { name: 'dv', mountPath: '/var/run/kubevirt-private/vmi-disks/dv' },
    ]);
    // Every claim is still a pod volume.
    expect(pod.spec!.volumes!.filter((pv) => pv.persistentVolumeClaim).map((pv) => pv.name)).toEqual([
      'fs',
      'blk',
      'dv',
    ]);
    // Without claim knowledge (no claim informer) nothing is a device.
    expect(renderLauncherPod(v, cfg, opts).spec!.containers[0].volumeDevices).toBeUndefined();
  });

  it('records each claim in status.volumeStatus, sorted by name, keeping what others wrote', () => {
    const v = vmi({ volumeStatus: [{ name: 'cd', target: 'vda', size: 5 }] });
    const status = nextVolumeStatus(v, lister);
    expect(status).toEqual([
      {
        name: 'blk',
        target: '',
        persistentVolumeClaimInfo: {
          claimName: 'blk-claim',
          accessModes: ['ReadWriteOnce'],
          volumeMode: 'Block',
          capacity: undefined,
          requests: { storage: '64Mi' },
          preallocated: false,
          filesystemOverhead: '0.055',
        },
      },
      { name: 'cd', target: 'vda', size: 5 },
      {
        name: 'dv',
        target: '',
        persistentVolumeClaimInfo: {
          claimName: 'dv1',
          accessModes: undefined,
          volumeMode: undefined,
          capacity: undefined,
          requests: { storage: '1Gi' },
          preallocated: true,
          filesystemOverhead: '0.055',
        },
      },
      {
        name: 'fs',
        target: '',
        persistentVolumeClaimInfo: {
          claimName: 'fs-claim',
          accessModes: ['ReadWriteOnce'],
          volumeMode: 'Filesystem',
          capacity: { storage: '2Gi' },
          requests: { storage: '1Gi' },
          preallocated: false,
          filesystemOverhead: '0.055',
        },
      },
    ]);
    // A migration target's pod (rendered without the claims) takes the block volumes from the status.
    const target = renderLauncherPod(vmi({ volumeStatus: status }), cfg, opts);
    expect(target.spec!.containers[0].volumeDevices).toEqual([{ name: 'blk', devicePath: '/dev/blk' }]);
  });
});

describe("the cluster's PVC disk settings reach the launcher", () => {
  it('renders the flags only when changed, and the launcher parses them back; bad values name the field', () => {
    const base = renderLauncherPod(vmi(), cfg, opts).spec!.containers[0].args!;
    expect(base.join(' ')).not.toMatch(/pvc/);
    expect(parseLauncherArgs(base)).toMatchObject({
      lessPVCSpaceToleration: 10,
      minimumReservePVCBytes: 131072,
    });
    const custom = createClusterConfig(
      { developerConfiguration: { pvcTolerateLessSpaceUpToPercent: 3, minimumReservePVCBytes: 0 } },
      { hostArchitecture: 'amd64' },
    );
    const args = renderLauncherPod(vmi(), custom, opts).spec!.containers[0].args!;
    expect(args.slice(-4)).toEqual(['--less-pvc-space-toleration', '3', '--minimum-pvc-reserve-bytes', '0']);
    expect(parseLauncherArgs(args)).toMatchObject({ lessPVCSpaceToleration: 3, minimumReservePVCBytes: 0 });
    const bad = createClusterConfig(
      { developerConfiguration: { pvcTolerateLessSpaceUpToPercent: 150 } },
      { hostArchitecture: 'amd64' },
    );
    expect(() => renderLauncherPod(vmi(), bad, opts)).toThrow(
      'developerConfiguration.pvcTolerateLessSpaceUpToPercent: 150 is not a whole percentage (0-100)',
    );
  });
});
