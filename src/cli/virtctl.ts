#!/usr/bin/env node
import { Command } from 'commander';
import { registerVirtctlCommands } from './commands/virtctl';

const program = registerVirtctlCommands(
  new Command('virtctl').description('virtctl-compatible CLI for kubevirt-ts').showHelpAfterError(),
);
program.parseAsync(process.argv).then(
  // Sockets kept alive by clients must not hold the process open once a command is done.
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
