/**
 * `kubevirt-ts virt-launcher --namespace NS --name NAME --uid UID ...`: the launcher
 * entry point the launcher Pod's compute container runs (flags as
 * controllers/common/launcher-args renders them). The `kubevirt-ts` binary takes a
 * shorter path to the same code (see ../kubevirt-ts.ts); this registration lists the
 * command in `--help` and serves programs that embed `buildProgram` (program.ts).
 */
import type { Command } from 'commander';
import { LAUNCHER_SUBCOMMAND } from '../../controllers/common/launcher-args';

/** Registers `virt-launcher` on the program. */
export function registerVirtLauncherCommand(program: Command): void {
  program
    .command(LAUNCHER_SUBCOMMAND)
    .description('run one VMI: serve the launcher protocol on the pod sockets dir and drive its domain')
    .helpOption(false)
    .allowUnknownOption(true)
    .argument('[flags...]', 'launcher flags (--namespace, --name, --uid, --grace-period-seconds, ...)')
    .action(async (_flags: string[], _opts: unknown, cmd: Command) => {
      // commander reorders unknown options; take the words after the subcommand verbatim.
      const raw: string[] = (cmd.parent as unknown as { rawArgs?: string[] })?.rawArgs ?? process.argv;
      const { launcherMain } = await import('../virt-launcher');
      await launcherMain(raw.slice(raw.indexOf(LAUNCHER_SUBCOMMAND) + 1));
    });
}
