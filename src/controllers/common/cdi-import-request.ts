/**
 * What one importer run does, read from the environment the DataVolume controller gives
 * the importer pod (CDI's IMPORTER_* variable names where CDI has one).
 */
import { checksumProblem } from '../../api/cdi/checksum';

/** Environment variable names the controller sets and the importer reads. */
export const ImporterEnv = {
  source: 'IMPORTER_SOURCE',
  endpoint: 'IMPORTER_ENDPOINT',
  contentType: 'IMPORTER_CONTENTTYPE',
  imageSize: 'IMPORTER_IMAGE_SIZE',
  checksum: 'IMPORTER_CHECKSUM',
  accessKeyId: 'IMPORTER_ACCESS_KEY_ID',
  secretKey: 'IMPORTER_SECRET_KEY',
  certDir: 'IMPORTER_CERT_DIR',
  extraHeaders: 'IMPORTER_EXTRA_HEADERS',
  secretHeadersDir: 'IMPORTER_SECRET_EXTRA_HEADERS_DIR',
  filesystemOverhead: 'FILESYSTEM_OVERHEAD',
  volumeMode: 'IMPORTER_VOLUME_MODE',
} as const;

/** Where the target volume is in the importer pod (CDI's paths). */
export const IMPORTER_DATA_DIR = '/data';
export const IMPORTER_BLOCK_DEVICE = '/dev/cdi-block-volume';
export const IMPORTER_SCRATCH_DIR = '/scratch';
export const IMPORTER_CERT_DIR = '/certs';
/** Where the `secretExtraHeaders` Secrets are, one `secret<i>` directory each (CDI's path). */
export const IMPORTER_EXTRA_HEADERS_DIR = '/extraheaders';
/**
 * A registry import's disk, in the scratch space: the init container running the
 * containerDisk image copies the image's one file under /disk/ there (then renames it
 * from `.tmp`), and the importer converts it as it would a download.
 */
export const REGISTRY_IMAGE_FILE = 'registry-image';
/** The disk file on a filesystem volume, as KubeVirt reads it. */
export const DISK_IMAGE = 'disk.img';

export interface ImportRequest {
  /** `upload`: the upload server received the image into scratch (UPLOAD_IMAGE_FILE). */
  source: 'http' | 'blank' | 'registry' | 'upload';
  /** http: the URL; registry: the docker:// URL (for the log: the disk is in scratch). */
  endpoint?: string;
  contentType: 'kubevirt' | 'archive';
  /** The disk's size in bytes the DataVolume asked for (the disk is grown to it). */
  imageSizeBytes?: number;
  checksum?: { algorithm: string; hex: string };
  basicAuth?: { user: string; password: string };
  /** Directory of extra CA certificates (certConfigMap). */
  certDir?: string;
  extraHeaders: string[];
  /** Directory of the `secretExtraHeaders` Secrets (their files hold header lines). */
  secretHeadersDir?: string;
  volumeMode: 'Filesystem' | 'Block';
  /** Fraction of a filesystem volume kept free for the filesystem (0.06: 6%). */
  filesystemOverhead: number;
}

/** Parses the importer's environment; errors name the variable. */
export function importRequestFromEnv(env: NodeJS.ProcessEnv): ImportRequest {
  const source = env[ImporterEnv.source];
  if (source !== 'http' && source !== 'blank' && source !== 'registry')
    throw new Error(`${ImporterEnv.source}: ${JSON.stringify(source)} is not http, registry or blank`);
  const endpoint = env[ImporterEnv.endpoint] || undefined;
  if (source === 'http') {
    let url: URL;
    try {
      url = new URL(endpoint ?? '');
    } catch {
      throw new Error(`${ImporterEnv.endpoint}: ${JSON.stringify(endpoint)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`${ImporterEnv.endpoint}: ${url.protocol} is not http: or https:`);
  }
  const contentType = env[ImporterEnv.contentType] || 'kubevirt';
  if (contentType !== 'kubevirt' && contentType !== 'archive')
    throw new Error(`${ImporterEnv.contentType}: ${JSON.stringify(contentType)} is not kubevirt or archive`);
  if (contentType === 'archive') throw new Error(`${ImporterEnv.contentType}: archive is not supported yet`);
  const sizeText = env[ImporterEnv.imageSize];
  const imageSizeBytes = sizeText ? Number(sizeText) : undefined;
  if (imageSizeBytes !== undefined && !(Number.isSafeInteger(imageSizeBytes) && imageSizeBytes > 0))
    throw new Error(`${ImporterEnv.imageSize}: ${JSON.stringify(sizeText)} is not a byte count`);
  let checksum: ImportRequest['checksum'];
  const sum = env[ImporterEnv.checksum];
  if (sum) {
    const problem = checksumProblem(sum);
    if (problem) throw new Error(`${ImporterEnv.checksum}: ${problem}`);
    const [algorithm, hex] = sum.split(':');
    checksum = { algorithm, hex: hex.toLowerCase() };
  }
  const user = env[ImporterEnv.accessKeyId];
  const password = env[ImporterEnv.secretKey];
  const volumeMode = env[ImporterEnv.volumeMode] === 'Block' ? 'Block' : 'Filesystem';
  const overhead = Number(env[ImporterEnv.filesystemOverhead] ?? '0.06');
  if (!(overhead >= 0 && overhead < 1))
    throw new Error(
      `${ImporterEnv.filesystemOverhead}: ${JSON.stringify(env[ImporterEnv.filesystemOverhead])} is not a fraction`,
    );
  const headers = env[ImporterEnv.extraHeaders];
  return {
    source,
    endpoint,
    contentType,
    imageSizeBytes,
    checksum,
    basicAuth: user || password ? { user: user ?? '', password: password ?? '' } : undefined,
    certDir: env[ImporterEnv.certDir] || undefined,
    extraHeaders: headers ? (JSON.parse(headers) as string[]) : [],
    secretHeadersDir: env[ImporterEnv.secretHeadersDir] || undefined,
    volumeMode,
    filesystemOverhead: overhead,
  };
}
