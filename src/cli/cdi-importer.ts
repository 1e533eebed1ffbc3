/**
 * `kubevirt-ts cdi-importer`: the DataVolume importer pod's command (CDI's importer). Reads
 * the IMPORTER_* environment the DataVolume controller sets, imports into /data/disk.img
 * (filesystem volumes) or /dev/cdi-block-volume (block volumes), leaves its result in the
 * termination message, and exits non-zero on failure (the pod's restart retries from a
 * clean target). Loaded before commander (see kubevirt-ts.ts) as its own self-contained
 * bundle: the importer runs from the launcher's image, which has dist/ but no node_modules.
 */
import {
  FatalImportError,
  IMPORT_COMPLETE,
  IMPORTER_BLOCK_DEVICE,
  IMPORTER_DATA_DIR,
  IMPORTER_SCRATCH_DIR,
  importRequestFromEnv,
  runImport,
  secretHeaderLines,
  TERMINATION_LOG,
  writeTermination,
} from '../controllers/cdi-importer';
import { pathMapFromEnv } from '../controllers/common/path-map';

/** Runs one import from the environment; sets the exit code (2: fatal, 1: retry). */
export async function cdiImporterMain(): Promise<void> {
  const log = (line: string) => console.error(`cdi-importer: ${line}`);
  // In a pod: identity. Under local mode's pod runtime (no mount namespace): the pod's mounts.
  const paths = pathMapFromEnv();
  const terminationLog = paths.toHost(TERMINATION_LOG);
  try {
    const req = importRequestFromEnv(process.env);
    if (req.secretHeadersDir)
      req.extraHeaders.push(...(await secretHeaderLines(paths.toHost(req.secretHeadersDir))));
    const out = await runImport(
      req,
      {
        dataDir: paths.toHost(IMPORTER_DATA_DIR),
        blockDevice: paths.toHost(IMPORTER_BLOCK_DEVICE),
        scratchDir: paths.toHost(IMPORTER_SCRATCH_DIR),
      },
      log,
    );
    writeTermination({ message: IMPORT_COMPLETE, diskBytes: out.diskBytes }, terminationLog);
  } catch (err) {
    const message = (err as Error).message;
    log(message);
    const fatal = err instanceof FatalImportError;
    writeTermination({ message, ...(fatal ? { fatal } : {}) }, terminationLog);
    process.exitCode = fatal ? 2 : 1;
  }
}
