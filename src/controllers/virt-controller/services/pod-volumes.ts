import type { VirtualMachineInstance } from '../../../api/generated/types';
import { hostDiskPathProblem } from '../../common/host-disk-path';
import { LAUNCHER_DIRS } from '../../common/launcher-args';
import type { PodContainer, PodVolume } from '../../common/pod';
import { hasTpm } from './memory-overhead';
import { PodRenderError } from './pod-render-error';

/**
 * upstream VolumeRenderer: the launcher's shared emptyDirs plus the VMI's PVCs and config
 * volumes. A claim named in `blockVolumes` (its claim is `volumeMode: Block`) becomes a
 * device at `/dev/<volume>` (upstream addPVCToLaunchManifest), any other claim a mount
 * of its filesystem at `<private>/vmi-disks/<volume>`.
 */
export function launcherVolumes(
  vmi: VirtualMachineInstance,
  blockVolumes: ReadonlySet<string> = new Set(),
): {
  volumes: PodVolume[];
  mounts: NonNullable<PodContainer['volumeMounts']>;
  devices: NonNullable<PodContainer['volumeDevices']>;
} {
  const volumes: PodVolume[] = [
    { name: 'private', emptyDir: {} },
    { name: 'public', emptyDir: {} },
    { name: 'sockets', emptyDir: {} },
    { name: 'virt-bin-share-dir', emptyDir: {} },
    { name: 'libvirt-runtime', emptyDir: {} },
    { name: 'ephemeral-disks', emptyDir: {} },
    { name: 'container-disks', emptyDir: {} },
  ];
  const mounts: NonNullable<PodContainer['volumeMounts']> = [
    { name: 'private', mountPath: LAUNCHER_DIRS.private },
    { name: 'public', mountPath: LAUNCHER_DIRS.share },
    { name: 'ephemeral-disks', mountPath: LAUNCHER_DIRS.ephemeralDisks },
    { name: 'container-disks', mountPath: LAUNCHER_DIRS.containerDisks, mountPropagation: 'HostToContainer' },
    { name: 'libvirt-runtime', mountPath: LAUNCHER_DIRS.libvirtRuntime },
    { name: 'sockets', mountPath: `${LAUNCHER_DIRS.share}/sockets` },
  ];
  const devices: NonNullable<PodContainer['volumeDevices']> = [];
  if (!vmi.spec.domain.devices.disableHotplug) {
    volumes.push({ name: 'hotplug-disks', emptyDir: {} });
    mounts.push({
      name: 'hotplug-disks',
      mountPath: LAUNCHER_DIRS.hotplugDisks,
      mountPropagation: 'HostToContainer',
    });
  }
  if (hasTpm(vmi)) {
    // swtpm state lives in the private dir; nothing extra to mount for a non-persistent TPM.
  }
  // Config volumes get a pod volume always and a mount only when a disk uses them (upstream withVMIConfigVolumes).
  const diskNames = new Set((vmi.spec.domain.devices.disks ?? []).map((d) => d.name));
  const configMount = (name: string, dir: string) => {
    if (diskNames.has(name))
      mounts.push({ name, mountPath: `${LAUNCHER_DIRS.private}/${dir}/${name}`, readOnly: true });
  };
  // cloud-init secretRefs: the secret's keys mounted one by one (subPath) where the launcher reads them.
  const cloudInitSecret = (vol: string, suffix: string, secretName: string, keys: string[]) => {
    const name = `${vol}-${suffix}`;
    volumes.push({ name, secret: { secretName } });
    for (const key of keys)
      mounts.push({
        name,
        mountPath: `${LAUNCHER_DIRS.private}/secret/${vol}/${key}`,
        subPath: key,
        readOnly: true,
      });
  };
  (vmi.spec.volumes ?? []).forEach((v, i) => {
    const field = `spec.volumes[${i}]`;
    const claim = v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name;
    if (claim !== undefined) {
      if (v.persistentVolumeClaim?.hotpluggable || v.dataVolume?.hotpluggable) return;
      volumes.push({
        name: v.name,
        persistentVolumeClaim: { claimName: claim, readOnly: v.persistentVolumeClaim?.readOnly },
      });
      if (blockVolumes.has(v.name)) devices.push({ name: v.name, devicePath: `/dev/${v.name}` });
      else mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.private}/vmi-disks/${v.name}` });
    } else if (v.configMap) {
      volumes.push({
        name: v.name,
        configMap: { name: v.configMap.name ?? '', optional: v.configMap.optional },
      });
      configMount(v.name, 'config-map');
    } else if (v.secret) {
      volumes.push({
        name: v.name,
        secret: { secretName: v.secret.secretName ?? '', optional: v.secret.optional },
      });
      configMount(v.name, 'secret');
    } else if (v.downwardAPI) {
      volumes.push({
        name: v.name,
        downwardAPI: {
          items: (v.downwardAPI.fields ?? []) as NonNullable<PodVolume['downwardAPI']>['items'],
        },
      });
      configMount(v.name, 'downwardapi');
    } else if (v.sysprep) {
      const src = v.sysprep;
      if (!src.configMap?.name && !src.secret?.name)
        throw new PodRenderError(`${field}.sysprep: needs a configMap or a secret`);
      volumes.push(
        src.configMap?.name
          ? { name: v.name, configMap: { name: src.configMap.name } }
          : { name: v.name, secret: { secretName: src.secret?.name ?? '' } },
      );
      mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.private}/sysprep/${v.name}`, readOnly: true });
    } else if (v.cloudInitNoCloud || v.cloudInitConfigDrive) {
      const src = v.cloudInitNoCloud ?? v.cloudInitConfigDrive!;
      if (src.secretRef?.name) cloudInitSecret(v.name, 'udata', src.secretRef.name, ['userdata', 'userData']);
      if (src.networkDataSecretRef?.name)
        cloudInitSecret(v.name, 'ndata', src.networkDataSecretRef.name, ['networkdata', 'networkData']);
    } else if (v.hostDisk) {
      const path = v.hostDisk.path;
      const problem = hostDiskPathProblem(path);
      if (problem) throw new PodRenderError(`${field}.hostDisk.path: ${JSON.stringify(path)} ${problem}`);
      const dir = path.slice(0, path.lastIndexOf('/')) || '/';
      volumes.push({
        name: v.name,
        hostPath: { path: dir, type: v.hostDisk.type === 'DiskOrCreate' ? 'DirectoryOrCreate' : 'Directory' },
      });
      mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.private}/vmi-disks/${v.name}` });
    } else if (v.downwardMetrics) {
      volumes.push({ name: v.name, emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } });
      mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.share}/downwardmetrics-disk` });
    }
  });
  // upstream withAccessCredentials: each Secret whole at secret/<name>-access-cred (read by
  // the launcher for cloud-init meta-data). A Secret named twice is mounted once.
  const credSecrets = new Set<string>();
  (vmi.spec.accessCredentials ?? []).forEach((cred, i) => {
    const secretName =
      cred.sshPublicKey?.source?.secret?.secretName ?? cred.userPassword?.source?.secret?.secretName;
    if (!secretName || credSecrets.has(secretName)) return;
    credSecrets.add(secretName);
    const name = `${secretName}-access-cred`;
    // Two pod volumes of one name make an invalid pod: say which VMI fields clash.
    if (volumes.some((v) => v.name === name))
      throw new PodRenderError(
        `spec.accessCredentials[${i}]: its Secret's pod volume '${name}' has the name of another launcher pod volume (a VMI volume of that name?)`,
      );
    volumes.push({ name, secret: { secretName } });
    mounts.push({ name, mountPath: `${LAUNCHER_DIRS.private}/secret/${name}`, readOnly: true });
  });
  return { volumes, mounts, devices };
}
