/**
 * The launcher pod's volumes and mounts for the VMI's volumes, as upstream's
 * VolumeRenderer renders them: config volumes (mounted only when a disk uses them),
 * cloud-init secretRef keys mounted by subPath, sysprep, hostDisk directories, PVCs.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { renderLauncherPod } from '../../../../src/controllers/virt-controller/services/pod-renderer';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const opts = { launcherImage: 'kubevirt-ts/launcher:dev' };

function vmi(
  volumes: NonNullable<VirtualMachineInstance['spec']['volumes']>,
  disks: string[],
): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'default', uid: 'u-1' },
    spec: {
      domain: {
        resources: { requests: { memory: '128Mi' } },
        devices: { autoattachPodInterface: false, disks: disks.map((name) => ({ name })) },
      },
      volumes,
    },
  } as VirtualMachineInstance;
}

describe('launcher pod volumes', () => {
  it('mounts configMap, secret and downwardAPI volumes a disk uses, read-only, at upstream paths', () => {
    const pod = renderLauncherPod(
      vmi(
        [
          { name: 'cfg', configMap: { name: 'app', optional: true, volumeLabel: 'OEMDRV' } },
          { name: 'sec', secret: { secretName: 'creds' } },
          {
            name: 'dapi',
            downwardAPI: { fields: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
          },
          { name: 'nodisk', configMap: { name: 'other' } },
        ],
        ['cfg', 'sec', 'dapi'],
      ),
      cfg,
      opts,
    );
    const mounts = pod.spec!.containers[0].volumeMounts!;
    expect(pod.spec!.volumes).toContainEqual({ name: 'cfg', configMap: { name: 'app', optional: true } });
    expect(pod.spec!.volumes).toContainEqual({ name: 'sec', secret: { secretName: 'creds' } });
    expect(pod.spec!.volumes).toContainEqual({
      name: 'dapi',
      downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
    });
    expect(mounts).toContainEqual({
      name: 'cfg',
      mountPath: '/var/run/kubevirt-private/config-map/cfg',
      readOnly: true,
    });
    expect(mounts).toContainEqual({
      name: 'sec',
      mountPath: '/var/run/kubevirt-private/secret/sec',
      readOnly: true,
    });
    expect(mounts).toContainEqual({
      name: 'dapi',
      mountPath: '/var/run/kubevirt-private/downwardapi/dapi',
      readOnly: true,
    });
    // A config volume no disk uses gets its pod volume but no mount (upstream withVMIConfigVolumes).
    expect(pod.spec!.volumes).toContainEqual({ name: 'nodisk', configMap: { name: 'other' } });
    expect(mounts.some((m) => m.name === 'nodisk')).toBe(false);
  });

  it('mounts cloud-init secretRef keys one by one where the launcher reads them', () => {
    const pod = renderLauncherPod(
      vmi(
        [
          {
            name: 'ci',
            cloudInitNoCloud: { secretRef: { name: 'ud' }, networkDataSecretRef: { name: 'nd' } },
          },
        ],
        ['ci'],
      ),
      cfg,
      opts,
    );
    const mounts = pod.spec!.containers[0].volumeMounts!;
    expect(pod.spec!.volumes).toContainEqual({ name: 'ci-udata', secret: { secretName: 'ud' } });
    expect(pod.spec!.volumes).toContainEqual({ name: 'ci-ndata', secret: { secretName: 'nd' } });
    expect(mounts.filter((m) => m.name === 'ci-udata')).toEqual([
      {
        name: 'ci-udata',
        mountPath: '/var/run/kubevirt-private/secret/ci/userdata',
        subPath: 'userdata',
        readOnly: true,
      },
      {
        name: 'ci-udata',
        mountPath: '/var/run/kubevirt-private/secret/ci/userData',
        subPath: 'userData',
        readOnly: true,
      },
    ]);
    expect(mounts.filter((m) => m.name === 'ci-ndata').map((m) => m.subPath)).toEqual([
      'networkdata',
      'networkData',
    ]);
  });

  it('mounts each accessCredentials Secret whole at secret/<name>-access-cred, once per Secret', () => {
    const v = vmi([{ name: 'ci', cloudInitNoCloud: { userData: '#cloud-config\n' } }], ['ci']);
    v.spec.accessCredentials = [
      { sshPublicKey: { source: { secret: { secretName: 'keys' } }, propagationMethod: { noCloud: {} } } },
      { sshPublicKey: { source: { secret: { secretName: 'keys' } }, propagationMethod: { noCloud: {} } } },
      { sshPublicKey: { source: { secret: { secretName: 'more' } }, propagationMethod: { noCloud: {} } } },
    ];
    const pod = renderLauncherPod(v, cfg, opts);
    const vols = pod.spec!.volumes!.filter((x) => x.name.endsWith('-access-cred'));
    expect(vols).toEqual([
      { name: 'keys-access-cred', secret: { secretName: 'keys' } },
      { name: 'more-access-cred', secret: { secretName: 'more' } },
    ]);
    const mounts = pod.spec!.containers[0].volumeMounts!.filter((m) => m.name.endsWith('-access-cred'));
    expect(mounts).toEqual([
      {
        name: 'keys-access-cred',
        mountPath: '/var/run/kubevirt-private/secret/keys-access-cred',
        readOnly: true,
      },
      {
        name: 'more-access-cred',
        mountPath: '/var/run/kubevirt-private/secret/more-access-cred',
        readOnly: true,
      },
    ]);
  });

  it('refuses an accessCredentials Secret whose pod volume name another volume has', () => {
    const v = vmi(
      [
        { name: 'ci', cloudInitNoCloud: { userData: '#cloud-config\n' } },
        { name: 'keys-access-cred', secret: { secretName: 'other' } },
      ],
      ['ci'],
    );
    v.spec.accessCredentials = [
      { sshPublicKey: { source: { secret: { secretName: 'keys' } }, propagationMethod: { noCloud: {} } } },
    ];
    expect(() => renderLauncherPod(v, cfg, opts)).toThrow(
      "spec.accessCredentials[0]: its Secret's pod volume 'keys-access-cred' has the name of another launcher pod volume (a VMI volume of that name?)",
    );
  });

  it('mounts a sysprep configMap or secret at the sysprep dir', () => {
    const pod = renderLauncherPod(
      vmi(
        [
          { name: 'sp', sysprep: { configMap: { name: 'answers' } } },
          { name: 'sp2', sysprep: { secret: { name: 'answers2' } } },
        ],
        ['sp', 'sp2'],
      ),
      cfg,
      opts,
    );
    expect(pod.spec!.volumes).toContainEqual({ name: 'sp', configMap: { name: 'answers' } });
    expect(pod.spec!.volumes).toContainEqual({ name: 'sp2', secret: { secretName: 'answers2' } });
    expect(pod.spec!.containers[0].volumeMounts).toContainEqual({
      name: 'sp',
      mountPath: '/var/run/kubevirt-private/sysprep/sp',
      readOnly: true,
    });
  });

  it("mounts a hostDisk's directory as a hostPath (DirectoryOrCreate for DiskOrCreate)", () => {
    const pod = renderLauncherPod(
      vmi(
        [
          { name: 'hd', hostDisk: { path: '/data/vms/disk.img', type: 'DiskOrCreate', capacity: '1Gi' } },
          { name: 'hd2', hostDisk: { path: '/data/disk2.img', type: 'Disk' } },
        ],
        ['hd', 'hd2'],
      ),
      cfg,
      opts,
    );
    expect(pod.spec!.volumes).toContainEqual({
      name: 'hd',
      hostPath: { path: '/data/vms', type: 'DirectoryOrCreate' },
    });
    expect(pod.spec!.volumes).toContainEqual({ name: 'hd2', hostPath: { path: '/data', type: 'Directory' } });
    expect(pod.spec!.containers[0].volumeMounts).toContainEqual({
      name: 'hd',
      mountPath: '/var/run/kubevirt-private/vmi-disks/hd',
    });
  });

  it('rejects hostDisk paths with control characters or a trailing slash, naming the field', () => {
    expect(() =>
      renderLauncherPod(
        vmi([{ name: 'h', hostDisk: { path: '/data/a\tb.img', type: 'Disk' } }], ['h']),
        cfg,
        opts,
      ),
    ).toThrow('spec.volumes[0].hostDisk.path: "/data/a\\tb.img" must not contain control characters');
    expect(() =>
      renderLauncherPod(vmi([{ name: 'h', hostDisk: { path: '/data/', type: 'Disk' } }], ['h']), cfg, opts),
    ).toThrow('spec.volumes[0].hostDisk.path: "/data/" must name a file, not a directory');
  });

  it('refuses a sysprep volume with neither configMap nor secret', () => {
    expect(() => renderLauncherPod(vmi([{ name: 'sp', sysprep: {} }], ['sp']), cfg, opts)).toThrow(
      'spec.volumes[0].sysprep: needs a configMap or a secret',
    );
  });
});
