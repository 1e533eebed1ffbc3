/**
 * `kubevirt-ts cdi-importer` in the CLI's help. The importer pod never reaches commander:
 * kubevirt-ts.ts dispatches the subcommand to its own bundle first (see ../cdi-importer.ts).
 */
import type { Command } from 'commander';
import { cdiImporterMain } from '../cdi-importer';

/** Registers `cdi-importer` on the program. */
export function registerCdiImporterCommand(program: Command): void {
  program
    .command('cdi-importer')
    .description("import a DataVolume's source into its volume (run by the importer pod)")
    .action(cdiImporterMain);
}
