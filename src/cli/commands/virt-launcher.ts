/**
 * `kubevirt-ts virt-launcher --namespace NS --name NAME --uid UID ...`: the launcher
 * entry point the launcher Pod's compute container runs (flags as
 * controllers/services/launcher-args renders them). Thin: parse, compose, run.
 */
import type { Command } from 'commander';
import type { VirtLauncher } from '../../controllers/launcher/launcher';
import { LAUNCHER_SUBCOMMAND, parseLauncherArgs } from '../../controllers/services/launcher-args';

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
      const args = parseLauncherArgs(raw.slice(raw.indexOf(LAUNCHER_SUBCOMMAND) + 1));
      const { createLauncherContainer, LauncherTokens } = await import(
        '../../controllers/composition/launcher-container'
      );
      const { runVirtLauncher } = await import('../../controllers/launcher/main');
      const launcher = createLauncherContainer({ args }).get<VirtLauncher>(LauncherTokens.launcher);
      process.exitCode = await runVirtLauncher(launcher);
      // gRPC and libvirt handles are closed; exit now rather than wait for stray timers.
      process.exit(process.exitCode);
    });
}
