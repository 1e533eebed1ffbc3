/**
 * Names the upload path shares (CDI's): the upload server's paths and port, the PVC
 * annotations the upload controller keeps, the upload pod's and Service's names, the
 * client name the upload server accepts, and the upload server's environment.
 */

/** The annotation asking for an upload into a PVC (its value is empty). */
export const UPLOAD_REQUEST_ANNOTATION = 'cdi.kubevirt.io/storage.upload.target';
/** The upload pod's phase, mirrored on the PVC (also the importer's). */
export const POD_PHASE_ANNOTATION = 'cdi.kubevirt.io/storage.pod.phase';
/** Whether the upload pod is ready to receive, mirrored on the PVC. */
export const POD_READY_ANNOTATION = 'cdi.kubevirt.io/storage.pod.ready';
/** The upload pod's name, on the PVC. */
export const UPLOAD_POD_ANNOTATION = 'cdi.kubevirt.io/storage.uploadPodName';
/** The TLS client name the upload server accepts, on the PVC (CDI's). */
export const UPLOAD_CLIENT_NAME_ANNOTATION = 'cdi.kubevirt.io/uploadClientName';
/** The last error of the upload server (its termination message), on the PVC. */
export const UPLOAD_ERROR_ANNOTATION = 'cdi.kubevirt.io/storage.condition.running.message';
/** `virtctl image-upload --force-bind` (CDI's immediate-binding request). */
export const FORCE_BIND_ANNOTATION = 'cdi.kubevirt.io/storage.bind.immediate.requested';

/** The upload proxy's client certificate's common name (CDI's). */
export const UPLOAD_CLIENT_NAME = 'client.upload-server.cdi.kubevirt.io';

/** The upload server's port (CDI's). */
export const UPLOAD_SERVER_PORT = 8443;
/** The upload proxy's container port. */
export const UPLOAD_PROXY_PORT = 8443;

/** Paths a client POSTs an image to (CDI's common.UploadPath*). */
export const UploadPaths = {
  sync: '/v1beta1/upload',
  async: '/v1beta1/upload-async',
  formSync: '/v1beta1/upload-form',
  formAsync: '/v1beta1/upload-form-async',
  archive: '/v1beta1/upload-archive',
  archiveAlpha: '/v1alpha1/upload-archive',
  alphaSync: '/v1alpha1/upload',
  alphaAsync: '/v1alpha1/upload-async',
  alphaFormSync: '/v1alpha1/upload-form',
  alphaFormAsync: '/v1alpha1/upload-form-async',
} as const;

/** How a path receives its image. */
export interface UploadPathKind {
  /** Answer once the bytes are in, then process (the client polls the PVC). */
  async: boolean;
  /** A multipart form whose `file` part is the image. */
  form: boolean;
  /** An archive upload (contentType archive): refused, as archive DataVolumes are. */
  archive: boolean;
}

/** The kind of each upload path; anything else is not an upload. */
export function uploadPathKind(path: string): UploadPathKind | undefined {
  const P = UploadPaths;
  const table: Record<string, UploadPathKind> = {
    [P.sync]: { async: false, form: false, archive: false },
    [P.alphaSync]: { async: false, form: false, archive: false },
    [P.async]: { async: true, form: false, archive: false },
    [P.alphaAsync]: { async: true, form: false, archive: false },
    [P.formSync]: { async: false, form: true, archive: false },
    [P.alphaFormSync]: { async: false, form: true, archive: false },
    [P.formAsync]: { async: true, form: true, archive: false },
    [P.alphaFormAsync]: { async: true, form: true, archive: false },
    [P.archive]: { async: false, form: false, archive: true },
    [P.archiveAlpha]: { async: false, form: false, archive: true },
  };
  return Object.hasOwn(table, path) ? table[path] : undefined;
}

/** The upload pod's and its Service's name for a claim: `cdi-upload-<claim>` (CDI's), cut to 63. */
export function uploadResourceName(claim: string): string {
  return `cdi-upload-${claim}`.slice(0, 63).replace(/[-.]+$/, '');
}

/** The upload server's environment (CDI's names where CDI has one). */
export const UploadServerEnv = {
  certFile: 'TLS_CERT_FILE',
  keyFile: 'TLS_KEY_FILE',
  clientCertFile: 'CLIENT_CERT_FILE',
  clientName: 'CLIENT_NAME',
  imageSize: 'UPLOAD_IMAGE_SIZE',
  filesystemOverhead: 'FILESYSTEM_OVERHEAD',
  volumeMode: 'UPLOAD_VOLUME_MODE',
  /** RFC 3339: stop when idle after it (CDI's DEADLINE), before the certificate ends. */
  deadline: 'DEADLINE',
} as const;

/** The upload server pod's readiness path. */
export const UPLOAD_HEALTHZ_PATH = '/healthz';
/** Where the upload server keeps what arrives (the scratch emptyDir). */
export const UPLOAD_IMAGE_FILE = 'upload-image';
