/**
 * Where the launcher pod's volumes are mounted in the compute container (upstream's
 * paths: pkg/config, pkg/host-disk). The launcher reads its config volumes, cloud-init
 * secrets and host disks there, through the pod's path map.
 */
import type { ConfigVolumeKind } from '../../converter';

/** upstream config.mountBaseDir. */
export const PRIVATE_DIR = '/var/run/kubevirt-private';
/** upstream config.ServiceAccountSourceDir: the token volume kubelet mounts for the pod. */
export const SERVICE_ACCOUNT_SOURCE_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

const sourceDirs: Record<Exclude<ConfigVolumeKind, 'serviceAccount'>, string> = {
  configMap: 'config-map',
  secret: 'secret',
  downwardAPI: 'downwardapi',
  sysprep: 'sysprep',
};

/** The mount path of a config volume's source files. */
export function configSourceDir(kind: ConfigVolumeKind, volume: string): string {
  return kind === 'serviceAccount'
    ? SERVICE_ACCOUNT_SOURCE_DIR
    : `${PRIVATE_DIR}/${sourceDirs[kind]}/${volume}`;
}

/** upstream config.SecretSourceDir/<volume>: where a cloud-init volume's secretRef keys are mounted. */
export function cloudInitSecretDir(volume: string): string {
  return `${PRIVATE_DIR}/secret/${volume}`;
}

/** upstream hostdisk.GetMountedHostDiskDir: a hostDisk's (or filesystem PVC's) directory. */
export function mountedDiskDir(volume: string): string {
  return `${PRIVATE_DIR}/vmi-disks/${volume}`;
}

/**
 * upstream config.SecretSourceDir/<secret>-access-cred: where the Secret of an
 * `accessCredentials` entry is mounted, whole (every key a file).
 */
export function accessCredentialSecretDir(secretName: string): string {
  return `${PRIVATE_DIR}/secret/${secretName}-access-cred`;
}
