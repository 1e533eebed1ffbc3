/**
 * Launcher pods for a kubelet node (podRuntime: 'kubelet'): compute's postStart hook copies
 * the launcher image's busybox, and each containerDisk volume gets a container from its
 * image, after compute, that copies the disk to the launcher's backing file with it; the
 * pod shares one PID namespace (the pause container reaps libvirt's daemonized QEMU). The
 * local pod runtime's pods have neither.
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
  it('copies each containerDisk with a container from its image, beside compute', () => {
    const pod = renderLauncherPod(
      vmi([
        { name: 'boot', containerDisk: { image: 'reg/disk:1', imagePullPolicy: 'Never' } },
        { name: 'data', emptyDisk: { capacity: '1Gi' } },
        { name: 'extra', containerDisk: { image: 'reg/other:2', path: '/custom/../images/x.qcow2' } },
      ]),
      cfg,
      kubelet,
    );
    expect(pod.spec?.initContainers).toBeUndefined();
    const containers = pod.spec?.containers ?? [];
    expect(containers.map((c) => [c.name, c.image])).toEqual([
      ['compute', 'kubevirt-ts/launcher:dev'],
      ['volumeboot', 'reg/disk:1'],
      ['volumeextra', 'reg/other:2'],
    ]);
    const [compute, boot, extra] = containers;
    // The kubelet starts boot and extra only after this hook returned: busybox is there.
    expect(compute.lifecycle).toEqual({
      postStart: { exec: { command: ['cp', '/bin/busybox', '/init/usr/bin/busybox'] } },
    });
    expect(compute.volumeMounts).toContainEqual({ name: 'virt-bin-share-dir', mountPath: '/init/usr/bin' });
    expect(boot.imagePullPolicy).toBe('Never');
    expect(boot.command?.slice(0, 3)).toEqual(['/init/usr/bin/busybox', 'sh', '-c']);
    expect(boot.command?.[3]).toContain('while [ -e "$0" ]; do /init/usr/bin/busybox sleep 1; done; exit 0');
    // Volume index 0 and 2: the launcher's backing-file names; path normalized, passed as an argument.
    expect(boot.args).toEqual(['/var/run/kubevirt/container-disks/disk_0.img']);
    expect(extra.args).toEqual(['/var/run/kubevirt/container-disks/disk_2.img', '/images/x.qcow2']);
    for (const c of [boot, extra]) {
      expect(c.securityContext).toMatchObject({ runAsUser: 107, runAsNonRoot: true, privileged: false });
      expect(c.volumeMounts?.[0]).toEqual({ name: 'virt-bin-share-dir', mountPath: '/init/usr/bin' });
    }
    expect(boot.volumeMounts?.[1]).toEqual({
      name: 'container-disks',
      mountPath: '/var/run/kubevirt/container-disks',
    });
    expect(pod.spec?.shareProcessNamespace).toBe(true);
    expect(pod.metadata?.annotations?.['kubectl.kubernetes.io/default-container']).toBe('compute');
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
    expect(pod.spec?.containers.map((c) => c.name)).toEqual(['compute']);
    expect(pod.spec?.containers[0].lifecycle).toBeUndefined();
    expect(pod.spec?.shareProcessNamespace).toBeUndefined();
  });
});
