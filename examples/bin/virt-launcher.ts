#!/usr/bin/env node
/**
 * A thin virt-launcher composed from the public package with `createLauncherContainer`
 * (an inversify container): parses the launcher flags the VMI controller renders into the
 * Pod's command, serves the launcher protocol and drives the VMI's domain until it ends.
 *
 *   npx tsx examples/bin/virt-launcher.ts --namespace NS --name NAME --uid UID ...
 */
import {
  createLauncherContainer,
  LauncherTokens,
  type launcher,
  launcher as launcherModule,
  parseLauncherArgs,
} from 'kubevirt-ts/controllers';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(
    'usage: virt-launcher --namespace NS --name NAME --uid UID [--hypervisor libvirt|emulation|fake] ' +
      '[--kubevirt-share-dir DIR] [--grace-period-seconds N] [--allow-emulation] ...\n' +
      '(the flags the VMI controller renders into the launcher Pod)\n',
  );
  process.exit(0);
}
const args = parseLauncherArgs(process.argv.slice(2));
const container = createLauncherContainer({ args });
const vl = container.get<launcher.VirtLauncher>(LauncherTokens.launcher);
process.exit(await launcherModule.runVirtLauncher(vl));
