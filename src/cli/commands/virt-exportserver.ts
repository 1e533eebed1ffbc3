/**
 * `kubevirt-ts virt-exportserver` in the CLI's help. The export pod never reaches
 * commander: kubevirt-ts.ts dispatches the subcommand to its own bundle first (see
 * ../virt-exportserver.ts).
 */
import type { Command } from 'commander';
import { exportServerMain } from '../virt-exportserver';

/** Registers `virt-exportserver` on the program. */
export function registerVirtExportServerCommand(program: Command): void {
  program
    .command('virt-exportserver')
    .description(
      "serve a VirtualMachineExport's volumes over HTTPS (run by the export pod, from its environment)",
    )
    .action(() => exportServerMain());
}
