#!/usr/bin/env node
import { Command } from 'commander';

const program = new Command('virtctl').description('virtctl-compatible CLI for kubevirt-ts');
program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
