/**
 * `kubevirt-ts cdi-uploadserver`: the upload pod's command (CDI's cdi-uploadserver). Reads
 * the environment the upload controller sets (common/cdi-upload.ts UploadServerEnv),
 * serves until one upload is on the claim, leaves CDI's `Upload Complete` (or the error)
 * in the termination message and exits (0: done, or its DEADLINE passed with no upload;
 * 1: an async upload failed, the pod's restart waits for another). Loaded before commander (see kubevirt-ts.ts) as its own
 * self-contained bundle: it runs from the launcher's image (qemu-img, no node_modules).
 */

import { startUploadServer } from '../controllers/cdi-importer/upload-server';
import {
  IMPORTER_BLOCK_DEVICE,
  IMPORTER_DATA_DIR,
  IMPORTER_SCRATCH_DIR,
} from '../controllers/common/cdi-import-request';
import { TERMINATION_LOG, writeTermination } from '../controllers/common/cdi-import-termination';
import { UPLOAD_SERVER_PORT, UploadServerEnv } from '../controllers/common/cdi-upload';
import { PathMap, pathMapFromEnv } from '../controllers/common/path-map';

/** CDI's upload server's message on success. */
export const UPLOAD_COMPLETE = 'Upload Complete';

function need(env: NodeJS.ProcessEnv, name: string): string {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** Runs the server from `env` until an upload is done. */
export async function uploadServerMain(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const log = (line: string) => console.log(JSON.stringify({ component: 'cdi-uploadserver', msg: line }));
  // In a pod: identity. Under local mode's pod runtime (no mount namespace): the pod's
  // mounts, for the certificate files, /data, /scratch and the termination message alike.
  let paths = new PathMap();
  try {
    paths = pathMapFromEnv(env);
    const sizeText = env[UploadServerEnv.imageSize];
    const imageSizeBytes = sizeText ? Number(sizeText) : undefined;
    if (imageSizeBytes !== undefined && !(Number.isSafeInteger(imageSizeBytes) && imageSizeBytes > 0))
      throw new Error(`${UploadServerEnv.imageSize}: ${JSON.stringify(sizeText)} is not a byte count`);
    const overhead = Number(env[UploadServerEnv.filesystemOverhead] ?? '0.06');
    if (!(overhead >= 0 && overhead < 1))
      throw new Error(`${UploadServerEnv.filesystemOverhead}: ${JSON.stringify(overhead)} is not a fraction`);
    const deadline = env[UploadServerEnv.deadline] ? new Date(env[UploadServerEnv.deadline]!) : undefined;
    if (deadline && Number.isNaN(deadline.getTime()))
      throw new Error(`${UploadServerEnv.deadline}: ${env[UploadServerEnv.deadline]} is not a time`);
    const s = await startUploadServer({
      certFile: paths.toHost(need(env, UploadServerEnv.certFile)),
      keyFile: paths.toHost(need(env, UploadServerEnv.keyFile)),
      clientCaFile: paths.toHost(need(env, UploadServerEnv.clientCertFile)),
      clientName: need(env, UploadServerEnv.clientName),
      port: UPLOAD_SERVER_PORT,
      paths: {
        dataDir: paths.toHost(IMPORTER_DATA_DIR),
        blockDevice: paths.toHost(IMPORTER_BLOCK_DEVICE),
        scratchDir: paths.toHost(IMPORTER_SCRATCH_DIR),
      },
      volumeMode: env[UploadServerEnv.volumeMode] === 'Block' ? 'Block' : 'Filesystem',
      imageSizeBytes,
      filesystemOverhead: overhead,
      deadline,
      log,
    });
    process.once('SIGTERM', () => void s.close().then(() => process.exit(143)));
    try {
      const out = await s.done;
      // Past the deadline nothing was written: exit 0 without `Upload Complete`, and the
      // controller replaces the pod (with a new certificate).
      const terminationLog = paths.toHost(TERMINATION_LOG);
      if (out.deadlinePassed) writeTermination({ message: 'deadline passed: no upload' }, terminationLog);
      else writeTermination({ message: UPLOAD_COMPLETE, diskBytes: out.diskBytes }, terminationLog);
    } finally {
      await s.close();
    }
  } catch (e) {
    const message = (e as Error).message;
    log(message);
    writeTermination({ message }, paths.toHost(TERMINATION_LOG));
    process.exitCode = 1;
  }
}
