/**
 * Launcher pods for a kubelet node (podRuntime: 'kubelet'): each containerDisk volume gets
 * an init container from its image copying the disk to the launcher's backing file, with
 * the launcher image's busybox; the pod shares one PID namespace (the pause container
 * reaps libvirt's daemonized QEMU). The local pod runtime's pods have neither.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { renderLauncherPod } from '../../../../src/controllers/virt-controller/services/pod-renderer';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const kubelet = { launcherImage: 'kubevirt-ts/launcher:dev', podRuntime: 'kubelet' as const };

function vmi(volumes: NonNullable<VirtualMachineInstance['spec']['volumes']>): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'default', uid: 'u-1' },
    spec: {
      domain: {
        resources: { requests: { memory: '128Mi' } },
        devices: { autoattachPodInterface: false, disks: volumes.map((v) => ({ name: v.name })) },
      },
      volumes,
    },
  } as VirtualMachineInstance;
}

describe('launcher pod containerDisks under a kubelet', () => {
  it('copies each containerDisk with an init container from its image', () => {
    const pod = renderLauncherPod(
      vmi([
        { name: 'boot', containerDisk: { image: 'reg/disk:1', imagePullPolicy: 'Never' } },
        { name: 'data', emptyDisk: { capacity: '1Gi' } },
        { name: 'extra', containerDisk: { image: 'reg/other:2', path: '/custom/../images/x.qcow2' } },
      ]),
      cfg,
      kubelet,
    );
    const init = pod.spec?.initContainers ?? [];
    expect(init.map((c) => [c.name, c.image])).toEqual([
      ['container-disk-binary', 'kubevirt-ts/launcher:dev'],
      ['volumeboot', 'reg/disk:1'],
      ['volumeextra', 'reg/other:2'],
    ]);
    expect(init[0].command).toEqual(['cp', '/bin/busybox', '/init/usr/bin/busybox']);
    expect(init[1].imagePullPolicy).toBe('Never');
    expect(init[1].command?.slice(0, 3)).toEqual(['/init/usr/bin/busybox', 'sh', '-c']);
    // Volume index 0 and 2: the launcher's backing-file names; path normalized, passed as an argument.
    expect(init[1].args).toEqual(['/var/run/kubevirt/container-disks/disk_0.img']);
    expect(init[2].args).toEqual(['/var/run/kubevirt/container-disks/disk_2.img', '/images/x.qcow2']);
    for (const c of init) {
      expect(c.securityContext).toMatchObject({ runAsUser: 107, runAsNonRoot: true, privileged: false });
      expect(c.volumeMounts?.[0]).toEqual({ name: 'virt-bin-share-dir', mountPath: '/init/usr/bin' });
    }
    expect(init[1].volumeMounts?.[1]).toEqual({
      name: 'container-disks',
      mountPath: '/var/run/kubevirt/container-disks',
    });
    expect(pod.spec?.shareProcessNamespace).toBe(true);
  });

  it('refuses a path that leaves the image, naming the field', () => {
    expect(() =>
      renderLauncherPod(
        vmi([{ name: 'boot', containerDisk: { image: 'reg/d', path: '../..' } }]),
        cfg,
        kubelet,
      ),
    ).toThrow("spec.volumes[0].containerDisk.path: '../..' is not a file inside the image");
  });

  it('renders neither for the local pod runtime', () => {
    const pod = renderLauncherPod(vmi([{ name: 'boot', containerDisk: { image: 'reg/disk:1' } }]), cfg, {
      launcherImage: 'kubevirt-ts/launcher:dev',
    });
    expect(pod.spec?.initContainers).toBeUndefined();
    expect(pod.spec?.shareProcessNamespace).toBeUndefined();
  });
});
