/**
 * The virt-api process's entry: `kubevirt-ts virt-api FLAGS...` lands here before the
 * rest of the CLI is loaded (see kubevirt-ts.ts), and the build ships it as its own
 * minified file (`dist/cli/virt-api.js`, tsup.config.ts). The full command tree pulls in
 * every command and, through virtctl, `@kubernetes/client-node` (about 70 MB resident);
 * virt-api needs none of it, so it loads only its own command and the modules that serve.
 */
import { Command } from 'commander';
import { registerVirtApiCommand } from './commands/virt-api';

/** Runs `virt-api` with the words after it; bad flags exit 1 with the flag named. */
export async function virtApiMain(flags: string[]): Promise<void> {
  const program = new Command('kubevirt-ts').showHelpAfterError();
  registerVirtApiCommand(program);
  try {
    await program.parseAsync(['virt-api', ...flags], { from: 'user' });
  } catch (err) {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

// Run directly (`node dist/cli/virt-api.js FLAGS...`), not when imported by kubevirt-ts.ts.
const self = process.argv[1] ?? '';
if (/virt-api\.(js|ts|mjs)$/.test(self)) void virtApiMain(process.argv.slice(2));
