/**
 * `kubevirt-ts cdi-importer`: the DataVolume importer pod's command (CDI's importer). Reads
 * the IMPORTER_* environment the DataVolume controller sets, imports into /data/disk.img
 * (filesystem volumes) or /dev/cdi-block-volume (block volumes), leaves its result in the
 * termination message, and exits non-zero on failure (the pod's restart retries from a
 * clean target).
 */
import type { Command } from 'commander';
import {
  FatalImportError,
  IMPORT_COMPLETE,
  IMPORTER_BLOCK_DEVICE,
  IMPORTER_DATA_DIR,
  IMPORTER_SCRATCH_DIR,
  importRequestFromEnv,
  runImport,
  writeTermination,
} from '../../controllers/cdi-importer';

/** Registers `cdi-importer` on the program. */
export function registerCdiImporterCommand(program: Command): void {
  program
    .command('cdi-importer')
    .description("import a DataVolume's source into its volume (run by the importer pod)")
    .action(async () => {
      const log = (line: string) => console.error(`cdi-importer: ${line}`);
      try {
        const req = importRequestFromEnv(process.env);
        const out = await runImport(
          req,
          {
            dataDir: IMPORTER_DATA_DIR,
            blockDevice: IMPORTER_BLOCK_DEVICE,
            scratchDir: IMPORTER_SCRATCH_DIR,
          },
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
    });
}
