/**
 * Volume rules of a VMI spec (upstream's VMI create admitter): names unique, one source per
 * volume, cloud-init limits, host disks behind their feature gate, absolute paths, the
 * names a config, secret or service-account volume needs, at most one volume of the
 * one-per-VMI kinds.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { quantityIsZero } from '../config/quantity';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec, Volume } from '../generated/types';
import { validateConfigDiskNames } from './config-disk-names';

const arrayLenMax = 256;
const cloudInitUserMaxLen = 2048;
const cloudInitNetworkMaxLen = 2048;

const volumeSources = [
  'persistentVolumeClaim',
  'sysprep',
  'cloudInitNoCloud',
  'cloudInitConfigDrive',
  'containerDisk',
  'ephemeral',
  'emptyDisk',
  'hostDisk',
  'dataVolume',
  'configMap',
  'secret',
  'downwardAPI',
  'serviceAccount',
  'downwardMetrics',
  'memoryDump',
  'containerPath',
] as const;

function isBase64(s: string): boolean {
  return /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0;
}

/** How upstream's messages name each kind of cloud-init data, and its size limit. */
const CLOUD_INIT_DATA = {
  user: {
    base64: 'userDataBase64',
    oneOnly: 'userdatasource',
    text: 'userdata',
    secretRef: 'UserDataSecretRef',
    maxLen: cloudInitUserMaxLen,
  },
  network: {
    base64: 'networkDataBase64',
    oneOnly: 'networkdata source',
    text: 'networkdata',
    secretRef: 'NetworkDataSecretRef',
    maxLen: cloudInitNetworkMaxLen,
  },
} as const;

/**
 * Checks one kind of cloud-init data (user or network): valid base64, at most one source,
 * the decoded size within its limit. Returns the errors and how many sources are set.
 */
function checkDataSources(
  tp: FieldPath,
  type: string,
  kind: keyof typeof CLOUD_INIT_DATA,
  src: { secretRef: boolean; base64?: string; plain?: string },
): { count: number; errs: FieldError[] } {
  const names = CLOUD_INIT_DATA[kind];
  const errs: FieldError[] = [];
  let count = src.secretRef ? 1 : 0;
  let bytes = 0;
  if (src.base64) {
    count++;
    if (!isBase64(src.base64)) {
      const bp = tp.child(names.base64);
      errs.push(fieldError(bp, `${bp}.${type}.${names.base64} is not a valid base64 value.`));
    } else bytes = Buffer.from(src.base64, 'base64').length;
  }
  if (src.plain) {
    count++;
    bytes = Buffer.byteLength(src.plain, 'utf8');
  }
  if (count > 1) errs.push(fieldError(tp, `${tp} must have only one ${names.oneOnly} set.`));
  if (bytes > names.maxLen) {
    errs.push(
      fieldError(
        tp,
        `${tp} ${names.text} exceeds ${names.maxLen} byte limit. Should use ${names.secretRef} for larger data.`,
      ),
    );
  }
  return { count, errs };
}

function validateCloudInit(p: FieldPath, volume: Volume): FieldError[] {
  const src = volume.cloudInitNoCloud ?? volume.cloudInitConfigDrive;
  if (!src) return [];
  const type = volume.cloudInitNoCloud ? 'cloudInitNoCloud' : 'cloudInitConfigDrive';
  const tp = p.child(type);
  const user = checkDataSources(tp, type, 'user', {
    secretRef: !!src.secretRef?.name,
    base64: src.userDataBase64,
    plain: src.userData,
  });
  const net = checkDataSources(tp, type, 'network', {
    secretRef: !!src.networkDataSecretRef?.name,
    base64: src.networkDataBase64,
    plain: src.networkData,
  });
  const errs = [...user.errs, ...net.errs];
  if (user.count === 0 && net.count === 0) {
    errs.push(fieldError(tp, `${tp} must have at least one userdatasource or one networkdatasource set.`));
  }
  return errs;
}

/** Absolute, normalised path without relative parts (upstream's `validatePath`). */
export function validateAbsolutePath(field: FieldPath, path: string): FieldError[] {
  if (path === '/') return [fieldError(field, `${field} must not point to root`)];
  const trimmed = path.replace(/\/+$/, '');
  const parts = trimmed.split('/');
  const clean = parts[0] === '' && parts.slice(1).every((s) => s !== '' && s !== '.' && s !== '..');
  if (!clean)
    return [fieldError(field, `${field} must be an absolute path to a file without relative components`)];
  return [];
}

/** Volume rules; `field` is the spec's path. */
export function validateVolumes(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const volumes = spec.volumes ?? [];
  const vp = field.child('volumes');
  if (volumes.length > arrayLenMax) {
    return [fieldError(vp, `${vp} list exceeds the ${arrayLenMax} element limit in length`)];
  }
  const errs: FieldError[] = [];
  const firstIndex = new Map<string, number>();
  let serviceAccounts = 0;
  let downwardMetrics = 0;
  let memoryDumps = 0;
  volumes.forEach((volume, idx) => {
    const p = vp.index(idx);
    const other = firstIndex.get(volume.name);
    if (other === undefined) firstIndex.set(volume.name, idx);
    else errs.push(fieldError(p.child('name'), `${p} and ${vp.index(other)} must not have the same Name.`));
    const sources = volumeSources.filter((s) => volume[s] !== undefined && volume[s] !== null);
    if (sources.length !== 1) errs.push(fieldError(p, `${p} must have exactly one source type set`));
    if (volume.serviceAccount) serviceAccounts++;
    if (volume.downwardMetrics) downwardMetrics++;
    if (volume.memoryDump) memoryDumps++;
    if (volume.dataVolume && !volume.dataVolume.name) {
      errs.push(fieldError(p.child('name'), "DataVolume 'name' must be set", 'FieldValueRequired'));
    }
    errs.push(...validateCloudInit(p, volume));
    if (volume.downwardMetrics && !config.isFeatureGateEnabled(FeatureGate.DownwardMetrics)) {
      errs.push(
        fieldError(p, 'downwardMetrics disks are not allowed: DownwardMetrics feature gate is not enabled.'),
      );
    }
    const hd = volume.hostDisk;
    if (hd) {
      if (!config.isFeatureGateEnabled(FeatureGate.HostDisk)) {
        errs.push(fieldError(p, 'HostDisk feature gate is not enabled'));
      }
      if (!hd.path) {
        errs.push(
          fieldError(
            p.child('hostDisk', 'path'),
            `${p.child('hostDisk', 'path')} is required for hostDisk volume`,
            'FieldValueNotFound',
          ),
        );
      }
      if (hd.type !== 'Disk' && hd.type !== 'DiskOrCreate') {
        errs.push(
          fieldError(
            p.child('hostDisk', 'type'),
            `${p.child('hostDisk', 'type')} has invalid value '${hd.type ?? ''}', allowed are 'Disk' or 'DiskOrCreate'`,
          ),
        );
      }
      if (hd.type === 'Disk' && !quantityIsZero(hd.capacity)) {
        errs.push(
          fieldError(
            p.child('hostDisk', 'capacity'),
            `${p.child('hostDisk', 'capacity')} is allowed to pass only with ${p.child('hostDisk', 'type')} equal to 'DiskOrCreate'`,
          ),
        );
      }
      if (hd.path) errs.push(...validateAbsolutePath(p.child('hostDisk', 'path'), hd.path));
    }
    errs.push(...validateConfigDiskNames(p, volume));
    if (volume.configMap && !volume.configMap.name) {
      errs.push(
        fieldError(p.child('configMap', 'name'), `${p.child('configMap', 'name')} is a required field`),
      );
    }
    if (volume.secret && !volume.secret.secretName) {
      errs.push(
        fieldError(p.child('secret', 'secretName'), `${p.child('secret', 'secretName')} is a required field`),
      );
    }
    if (volume.serviceAccount && !volume.serviceAccount.serviceAccountName) {
      const sp = p.child('serviceAccount', 'serviceAccountName');
      errs.push(fieldError(sp, `${sp} is a required field`));
    }
    if (volume.containerDisk?.path) {
      errs.push(...validateAbsolutePath(p.child('containerDisk'), volume.containerDisk.path));
    }
  });
  if (serviceAccounts > 1) errs.push(fieldError(vp, `${vp} must have max one serviceAccount volume set`));
  if (downwardMetrics > 1) errs.push(fieldError(vp, `${vp} must have max one downwardMetric volume set`));
  if (memoryDumps > 1) errs.push(fieldError(vp, `${vp} must have max one memory dump volume set`));
  return errs;
}
