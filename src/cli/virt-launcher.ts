/**
 * The launcher process's entry: `kubevirt-ts virt-launcher FLAGS...` lands here before
 * commander or any other command is loaded (see kubevirt-ts.ts), and the build ships it
 * as one self-contained, minified file (`dist/cli/virt-launcher.js`, tsup.config.ts).
 * One launcher runs per VM, so its memory is paid per guest: loading only the launcher's
 * own code and dependencies, from a single module, keeps its heap a fraction of the
 * full CLI's (which pulls in the Kubernetes client). Figures: docs/benchmarks.md.
 */

import { LauncherArgsError, parseLauncherArgs } from '../controllers/common/launcher-args';
import { createLauncherContainer, LauncherTokens } from '../controllers/composition/launcher-container';
import { ComponentLog } from '../controllers/logging/component-log';
import type { VirtLauncher } from '../controllers/virt-launcher/launcher';
import { runVirtLauncher } from '../controllers/virt-launcher/main';

/**
 * Runs one launcher from the words after `virt-launcher` and exits the process with its
 * exit code once the domain is gone. Bad flags exit 2 with the flag named.
 */
export async function launcherMain(flags: string[]): Promise<never> {
  let code: number;
  try {
    const args = parseLauncherArgs(flags);
    const launcher = createLauncherContainer({ args }).get<VirtLauncher>(LauncherTokens.launcher);
    code = await runVirtLauncher(launcher);
  } catch (err) {
    // A JSON line like the launcher's others (without the VMI when the flags did not parse).
    new ComponentLog('virt-launcher').logger.error(err instanceof Error ? err.message : String(err));
    code = err instanceof LauncherArgsError ? 2 : 1;
  }
  // gRPC and libvirt handles are closed; exit now rather than wait for stray timers.
  process.exit(code);
}

// Run directly (`node dist/cli/virt-launcher.js virt-launcher FLAGS...` or without the
// subcommand word), not when imported by kubevirt-ts.ts.
const self = process.argv[1] ?? '';
if (/virt-launcher\.(js|ts|mjs)$/.test(self)) void launcherMain(process.argv.slice(2));
