/**
 * `kubevirt-ts cdi-uploadserver` in the CLI's help. The upload pod never reaches
 * commander: kubevirt-ts.ts dispatches the subcommand to its own bundle first (see
 * ../cdi-uploadserver.ts).
 */
import type { Command } from 'commander';
import { uploadServerMain } from '../cdi-uploadserver';

/** Registers `cdi-uploadserver` on the program. */
export function registerCdiUploadServerCommand(program: Command): void {
  program
    .command('cdi-uploadserver')
    .description('receive one uploaded image into a PVC (run by the upload pod, from its environment)')
    .action(() => uploadServerMain());
}
