/**
 * Where each kind of volume lives on the launcher's filesystem, computed from the
 * context's directory layout. The converter only names these paths; the launcher creates
 * the files (overlays, empty disks, ISO images) before it defines the domain.
 */
import type { ConverterPaths } from './context';

/** The kinds of config volume that become ISO images. */
export type ConfigVolumeKind = 'configMap' | 'secret' | 'serviceAccount' | 'downwardAPI' | 'sysprep';

const configDirs: Record<ConfigVolumeKind, string> = {
  configMap: 'config-map-disks',
  secret: 'secret-disks',
  serviceAccount: 'service-account-disk',
  downwardAPI: 'downwardapi-disks',
  sysprep: 'sysprep-disks',
};

/** Upstream's hotplug directory in the launcher (an emptyDir the node agent mounts disks into). */
export const HOTPLUG_DISK_DIR = '/var/run/kubevirt/hotplug-disks';

/** Path helpers bound to one directory layout. */
export const volumePaths = {
  containerDiskBacking: (p: ConverterPaths, index: number) => `${p.containerDiskDir}/disk_${index}.img`,
  overlay: (p: ConverterPaths, volume: string) => `${p.ephemeralDiskDir}/${volume}/disk.qcow2`,
  emptyDisk: (p: ConverterPaths, volume: string) => `${p.emptyDiskDir}/${volume}.qcow2`,
  pvcFile: (p: ConverterPaths, volume: string) => `${p.pvcDiskDir}/${volume}/disk.img`,
  blockDevice: (p: ConverterPaths, volume: string) => `${p.blockDeviceDir}/${volume}`,
  hotplugDisk: (p: ConverterPaths, volume: string, block: boolean) =>
    `${p.hotplugDiskDir ?? HOTPLUG_DISK_DIR}/${volume}${block ? '' : '.img'}`,
  cloudInit: (p: ConverterPaths, namespace: string, name: string, kind: 'noCloud' | 'configDrive') =>
    `${p.cloudInitDir}/${namespace}/${name}/${kind === 'noCloud' ? 'noCloud.iso' : 'configdrive.iso'}`,
  // Upstream names the one serviceAccount ISO `service-account.iso` whatever its volume is called.
  configDisk: (p: ConverterPaths, kind: ConfigVolumeKind, volume: string) =>
    kind === 'serviceAccount'
      ? `${p.configDiskDir}/${configDirs[kind]}/service-account.iso`
      : `${p.configDiskDir}/${configDirs[kind]}/${volume}.iso`,
};
