import { Command } from 'commander';
import { registerCdiImporterCommand } from './commands/cdi-importer';
import { registerCdiUploadProxyCommand } from './commands/cdi-uploadproxy';
import { registerCdiUploadServerCommand } from './commands/cdi-uploadserver';
import { registerConvertCommand } from './commands/convert';
import { registerCsiDriverCommand } from './commands/csi-driver';
import { registerDescribeCommand } from './commands/describe';
import { registerGetCommand } from './commands/get';
import { registerImageCommand } from './commands/image';
import { registerUiCommand } from './commands/ui';
import { registerUpCommand } from './commands/up';
import { registerValidateCommand } from './commands/validate';
import { registerVirtApiCommand } from './commands/virt-api';
import { registerVirtCertsCommand } from './commands/virt-certs';
import { registerVirtControllerCommand } from './commands/virt-controller';
import { registerVirtExportProxyCommand } from './commands/virt-exportproxy';
import { registerVirtExportServerCommand } from './commands/virt-exportserver';
import { registerVirtHandlerCommand } from './commands/virt-handler';
import { registerVirtLauncherCommand } from './commands/virt-launcher';
import { registerVirtOperatorCommand } from './commands/virt-operator';
import { registerVirtctlCommands } from './commands/virtctl';

/**
 * Builds the `kubevirt-ts` command tree. Each subcommand lives in its own module under
 * `commands/` and registers itself here.
 */
export function buildProgram(): Command {
  const program = new Command('kubevirt-ts')
    .description('KubeVirt in TypeScript: local mode, conversion, validation and component entry points')
    .showHelpAfterError();
  registerConvertCommand(program);
  registerValidateCommand(program);
  registerVirtControllerCommand(program);
  registerVirtApiCommand(program);
  registerVirtCertsCommand(program);
  registerVirtHandlerCommand(program);
  registerVirtLauncherCommand(program);
  registerVirtOperatorCommand(program);
  registerCsiDriverCommand(program);
  registerCdiImporterCommand(program);
  registerCdiUploadServerCommand(program);
  registerCdiUploadProxyCommand(program);
  registerVirtExportServerCommand(program);
  registerVirtExportProxyCommand(program);
  registerUpCommand(program);
  registerUiCommand(program);
  registerImageCommand(program);
  registerGetCommand(program);
  registerDescribeCommand(program);
  registerVirtctlCommands(program.command('virtctl').description('virtctl-compatible commands'));
  return program;
}
