/**
 * What the VirtualMachineExport controller tells its export server pod, and how both name
 * things (upstream's pkg/storage/export/export/paths.go): the pod's environment carries,
 * per volume `i`, `VOLUMEi_EXPORT_PATH` (the mount point) and the URIs it serves that
 * volume at, `VOLUMEi_EXPORT_RAW_URI` and `_RAW_GZIP_URI` (a disk image: block volumes and
 * KubeVirt-content filesystem volumes) or `_ARCHIVE_URI` and `_DIR_URI` (any other
 * filesystem volume); plus `EXPORT_VM_DEF_URI` and `EXPORT_SECRET_DEF_URI` (manifests),
 * the TLS and token files and the `DEADLINE`. The controller renders this; the server
 * reads it back, so the two cannot disagree on a URL.
 */

/** The server's listening port (the Service maps 443 to it). */
export const EXPORT_SERVER_PORT = 8443;
/** Token header and query parameter (upstream's). */
export const EXPORT_TOKEN_HEADER = 'x-kubevirt-export-token';
/** The readiness path (no token). */
export const EXPORT_READY_PATH = '/exportready';
/** Where the manifest ConfigMap is mounted in the server pod. */
export const MANIFEST_DATA_DIR = '/manifest_data';
/** Keys of the manifest ConfigMap (upstream's). */
export const ManifestKeys = {
  vm: 'virtualmachine-manifest',
  exportName: 'export-name',
  internalHost: 'internal_host',
  internalCa: 'internal_ca_cm',
  /** Present when an Ingress led to the export proxy as the pod was made. */
  externalHost: 'external_host',
  externalCa: 'external_ca_cm',
} as const;
/** The manifest URIs, served under `/internal` and, when the ConfigMap has an external host, `/external`. */
export const MANIFESTS_ALL_URI = '/manifests/all';
export const MANIFESTS_SECRET_URI = '/manifests/secret';
/** Mount points of the claims in the server pod. */
export const FILESYSTEM_MOUNT_DIR = '/export-volumes';
export const BLOCK_DEVICE_DIR = '/dev/export-volumes';

/** Where one volume is and the URIs it is served at. */
export interface ExportVolumePaths {
  /** Mount point (a directory holding `disk.img`, or the contents) or device path. */
  path: string;
  rawUri?: string;
  rawGzUri?: string;
  archiveUri?: string;
  dirUri?: string;
}

/** Everything the server serves. */
export interface ExportServerPaths {
  vmUri?: string;
  secretUri?: string;
  volumes: ExportVolumePaths[];
}

/** The URIs of a claim (upstream's rawURI, rawGzipURI, archiveURI, dirURI). */
export function volumeUris(claimName: string, diskImage: boolean): Omit<ExportVolumePaths, 'path'> {
  const base = `/volumes/${claimName}`;
  return diskImage
    ? { rawUri: `${base}/disk.img`, rawGzUri: `${base}/disk.img.gz` }
    : { archiveUri: `${base}/disk.tar.gz`, dirUri: `${base}/dir/` };
}

type Env = Array<{ name: string; value: string }>;

/** The environment entries of volume `i`. */
export function volumeEnv(i: number, v: ExportVolumePaths): Env {
  const p = `VOLUME${i}_EXPORT`;
  const env: Env = [{ name: `${p}_PATH`, value: v.path }];
  if (v.rawUri) env.push({ name: `${p}_RAW_URI`, value: v.rawUri });
  if (v.rawGzUri) env.push({ name: `${p}_RAW_GZIP_URI`, value: v.rawGzUri });
  if (v.archiveUri) env.push({ name: `${p}_ARCHIVE_URI`, value: v.archiveUri });
  if (v.dirUri) env.push({ name: `${p}_DIR_URI`, value: v.dirUri });
  return env;
}

/** Reads the paths back from an environment (the server's `process.env`, or a pod's env list). */
export function serverPathsFromEnv(env: Record<string, string | undefined>): ExportServerPaths {
  const keys = Object.keys(env)
    .filter((k) => /^VOLUME\d+_EXPORT_PATH$/.test(k))
    .sort((a, b) => Number(a.slice(6, -12)) - Number(b.slice(6, -12)));
  const opt = (k: string) => (env[k] ? env[k] : undefined);
  return {
    vmUri: opt('EXPORT_VM_DEF_URI'),
    secretUri: opt('EXPORT_SECRET_DEF_URI'),
    volumes: keys.map((k) => {
      const p = k.slice(0, -'_PATH'.length);
      const v: ExportVolumePaths = { path: env[k] ?? '' };
      const set = (field: keyof Omit<ExportVolumePaths, 'path'>, suffix: string) => {
        const val = opt(`${p}_${suffix}`);
        if (val) v[field] = val;
      };
      set('rawUri', 'RAW_URI');
      set('rawGzUri', 'RAW_GZIP_URI');
      set('archiveUri', 'ARCHIVE_URI');
      set('dirUri', 'DIR_URI');
      return v;
    }),
  };
}
