/**
 * What goes inside the ISO images KubeVirt attaches as disks: cloud-init NoCloud and
 * ConfigDrive data, and configMap, secret, serviceAccount and downwardAPI volumes. Pure:
 * the caller (the launcher) passes the referenced Secret/ConfigMap data it fetched; this
 * module computes file names, contents and the volume label, and validates them.
 */
import type {
  CloudInitConfigDriveSource,
  CloudInitNoCloudSource,
  VirtualMachineInstance,
  Volume,
} from '../../api/generated/types';
import { ConversionError } from '../errors';

/** An ISO image to build: its volume label and files (relative path -> content). */
export interface IsoContents {
  label: string;
  files: Record<string, string | Uint8Array>;
}

/** Data the launcher resolved for a volume: Secret/ConfigMap keys, service account files. */
export interface ResolvedVolumeData {
  /** Secret or ConfigMap data by key (for configMap/secret volumes and cloud-init secretRefs). */
  data?: Record<string, string | Uint8Array>;
  /** For cloud-init `networkDataSecretRef`: the secret's data. */
  networkData?: Record<string, string | Uint8Array>;
  /**
   * For a cloud-init volume: the SSH public keys of the VMI's `accessCredentials` whose
   * propagationMethod is this volume's kind (noCloud or configDrive), one entry per key
   * of their Secrets in upstream's order. They go into the meta-data as upstream puts them.
   */
  sshPublicKeys?: string[];
}

const LABEL = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const FILE = /^[A-Za-z0-9._-]+$/;

function text(v: string | Uint8Array | undefined): string | undefined {
  return v === undefined ? undefined : typeof v === 'string' ? v : Buffer.from(v).toString('utf8');
}

function decodeBase64(vmiName: string, value: string, path: string): string {
  if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(value))
    throw new ConversionError(vmiName, path, 'is not valid base64');
  return Buffer.from(value, 'base64').toString('utf8');
}

interface CloudInitData {
  userData?: string;
  networkData?: string;
}

function cloudInitData(
  vmi: VirtualMachineInstance,
  src: CloudInitNoCloudSource | CloudInitConfigDriveSource,
  path: string,
  resolved: ResolvedVolumeData,
): CloudInitData {
  const name = vmi.metadata?.name ?? '';
  let userData = src.userData;
  if (src.userDataBase64 !== undefined)
    userData = decodeBase64(name, src.userDataBase64, `${path}.userDataBase64`);
  if (src.secretRef) {
    userData = text(resolved.data?.userdata ?? resolved.data?.userData);
    if (userData === undefined)
      throw new ConversionError(
        name,
        `${path}.secretRef`,
        `secret '${src.secretRef.name}' has no userdata key`,
      );
  }
  let networkData = src.networkData;
  if (src.networkDataBase64 !== undefined)
    networkData = decodeBase64(name, src.networkDataBase64, `${path}.networkDataBase64`);
  if (src.networkDataSecretRef) {
    networkData = text(resolved.networkData?.networkdata ?? resolved.networkData?.networkData);
    if (networkData === undefined) {
      throw new ConversionError(
        name,
        `${path}.networkDataSecretRef`,
        `secret '${src.networkDataSecretRef.name}' has no networkdata key`,
      );
    }
  }
  if (userData === undefined && networkData === undefined) {
    throw new ConversionError(name, path, 'needs userData or networkData (inline, base64 or from a secret)');
  }
  return { userData, networkData };
}

/**
 * Upstream's `public-keys` / `public_keys` meta-data map: "0", "1", ... in the order the
 * keys were read; surrounding whitespace is dropped and empty entries are skipped.
 */
function publicKeyMap(keys: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  for (const k of keys ?? []) {
    const key = k.trim();
    if (key) out[String(n++)] = key;
  }
  return out;
}

/** NoCloud meta-data `public-keys:` lines; JSON strings are valid YAML double-quoted scalars. */
function noCloudPublicKeys(keys: Record<string, string>): string {
  const names = Object.keys(keys);
  if (!names.length) return '';
  return `public-keys:\n${names.map((n) => `  ${JSON.stringify(n)}: ${JSON.stringify(keys[n])}\n`).join('')}`;
}

function instanceId(vmi: VirtualMachineInstance): string {
  return `${vmi.metadata?.name}.${vmi.metadata?.namespace || 'default'}`;
}

function hostname(vmi: VirtualMachineInstance): string {
  return vmi.spec.hostname || vmi.metadata?.name || '';
}

/** A `key="value"` line per entry, sorted, as the downward API formats labels and annotations. */
function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m![k])}`)
    .join('\n');
}

/**
 * The ISO contents of one volume of `vmi` (index `i` in `spec.volumes`), or undefined when
 * the volume is not ISO-backed. Throws `ConversionError` with the volume's field path.
 */
export function isoContents(
  vmi: VirtualMachineInstance,
  i: number,
  resolved: ResolvedVolumeData = {},
): IsoContents | undefined {
  const vol: Volume = vmi.spec.volumes![i];
  const path = `spec.volumes[${i}]`;
  const name = vmi.metadata?.name ?? '';
  const files: Record<string, string | Uint8Array> = {};
  const label = (l: string | undefined, fallback: string, field: string): string => {
    const v = l || fallback;
    if (!LABEL.test(v))
      throw new ConversionError(
        name,
        field,
        'must be 1 to 32 letters, digits, "_" or "-", starting with a letter or digit',
      );
    return v;
  };
  if (vol.cloudInitNoCloud) {
    const d = cloudInitData(vmi, vol.cloudInitNoCloud, `${path}.cloudInitNoCloud`, resolved);
    files['meta-data'] =
      `instance-id: ${instanceId(vmi)}\nlocal-hostname: ${hostname(vmi)}\n` +
      noCloudPublicKeys(publicKeyMap(resolved.sshPublicKeys));
    files['user-data'] = d.userData ?? '';
    if (d.networkData !== undefined) files['network-config'] = d.networkData;
    return { label: 'cidata', files };
  }
  if (vol.cloudInitConfigDrive) {
    const d = cloudInitData(vmi, vol.cloudInitConfigDrive, `${path}.cloudInitConfigDrive`, resolved);
    const keys = publicKeyMap(resolved.sshPublicKeys);
    const meta = {
      instance_type: '',
      availability_zone: '',
      uuid: instanceId(vmi),
      hostname: hostname(vmi),
      name: hostname(vmi),
      ...(Object.keys(keys).length ? { public_keys: keys } : {}),
    };
    files['openstack/latest/meta_data.json'] = JSON.stringify(meta);
    if (d.userData !== undefined) files['openstack/latest/user_data'] = d.userData;
    if (d.networkData !== undefined) files['openstack/latest/network_data.json'] = d.networkData;
    return { label: 'config-2', files };
  }
  const keyed = (data: Record<string, string | Uint8Array> | undefined, field: string) => {
    for (const [k, v] of Object.entries(data ?? {})) {
      if (!FILE.test(k) || k === '..' || k === '.')
        throw new ConversionError(
          name,
          field,
          `key '${JSON.stringify(k).slice(1, -1)}' cannot be a file name`,
        );
      files[k] = v;
    }
  };
  if (vol.configMap) {
    keyed(resolved.data, `${path}.configMap`);
    return { label: label(vol.configMap.volumeLabel, 'cfgdata', `${path}.configMap.volumeLabel`), files };
  }
  if (vol.secret) {
    keyed(resolved.data, `${path}.secret`);
    return { label: label(vol.secret.volumeLabel, 'cfgdata', `${path}.secret.volumeLabel`), files };
  }
  if (vol.serviceAccount) {
    keyed(resolved.data, `${path}.serviceAccount`);
    return { label: 'cfgdata', files };
  }
  if (vol.downwardAPI) {
    (vol.downwardAPI.fields ?? []).forEach((f, j) => {
      const fp = `${path}.downwardAPI.fields[${j}]`;
      if (!FILE.test(f.path)) throw new ConversionError(name, `${fp}.path`, 'must be a plain file name');
      const field = f.fieldRef?.fieldPath;
      const md = vmi.metadata ?? {};
      const value =
        field === 'metadata.labels'
          ? formatMap(md.labels)
          : field === 'metadata.annotations'
            ? formatMap(md.annotations)
            : field === 'metadata.name'
              ? md.name
              : field === 'metadata.namespace'
                ? md.namespace || 'default'
                : field === 'metadata.uid'
                  ? md.uid
                  : undefined;
      if (value === undefined)
        throw new ConversionError(
          name,
          `${fp}.fieldRef.fieldPath`,
          `'${field}' is not supported (labels, annotations, name, namespace, uid)`,
        );
      files[f.path] = value;
    });
    return { label: label(vol.downwardAPI.volumeLabel, 'cfgdata', `${path}.downwardAPI.volumeLabel`), files };
  }
  return undefined;
}
