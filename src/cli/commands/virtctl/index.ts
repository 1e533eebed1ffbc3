/**
 * The virtctl-compatible commands, registered on the `virtctl` bin and under
 * `kubevirt-ts virtctl`.
 */
import type { Command } from 'commander';
import { registerConsoleCommands } from './console';
import { registerCredentialsCommands } from './credentials';
import { registerExposeCommand } from './expose';
import { registerImageUploadCommand } from './image-upload';
import { registerLifecycleCommands } from './lifecycle';
import { registerMemoryDumpCommand } from './memory-dump';
import { registerPortForwardCommand } from './port-forward';
import { registerSshCommands } from './ssh';
import { registerVersionCommand } from './version';
import { registerVmExportCommand } from './vmexport';
import { registerVmiSubresourceCommands } from './vmi-subresources';
import { registerVolumeCommands } from './volumes';

/** Adds every virtctl command to `program`. */
export function registerVirtctlCommands(program: Command): Command {
  registerLifecycleCommands(program);
  registerVmiSubresourceCommands(program);
  registerConsoleCommands(program);
  registerExposeCommand(program);
  registerCredentialsCommands(program);
  registerPortForwardCommand(program);
  registerSshCommands(program);
  registerVolumeCommands(program);
  registerMemoryDumpCommand(program);
  registerVersionCommand(program);
  registerVmExportCommand(program);
  registerImageUploadCommand(program);
  return program;
}
