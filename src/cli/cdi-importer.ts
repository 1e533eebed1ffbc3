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
  writeTermination,
} from '../controllers/cdi-importer';

/** Runs one import from the environment; sets the exit code (2: fatal, 1: retry). */
export async function cdiImporterMain(): Promise<void> {
  const log = (line: string) => console.error(`cdi-importer: ${line}`);
  try {
    const req = importRequestFromEnv(process.env);
    const out = await runImport(
      req,
      { dataDir: IMPORTER_DATA_DIR, blockDevice: IMPORTER_BLOCK_DEVICE, scratchDir: IMPORTER_SCRATCH_DIR },
      log,
    );
    writeTermination({ message: IMPORT_COMPLETE, diskBytes: out.diskBytes });
  } catch (err) {
    const message = (err as Error).message;
    log(message);
    const fatal = err instanceof FatalImportError;
    writeTermination({ message, ...(fatal ? { fatal } : {}) });
    process.exitCode = fatal ? 2 : 1;
  }
}
