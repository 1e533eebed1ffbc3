/** `virtctl version`: the client's version and, when reachable, the local mode's. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { localRequest } from '../../local/local-client';
import { defaultStateDir, statePaths } from '../../local/state-dir';

/** This package's version, read from its package.json. */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'kubevirt-ts' && pkg.version) return pkg.version;
    } catch {}
    dir = dirname(dir);
  }
  return 'unknown';
}

export function registerVersionCommand(program: Command): void {
  program
    .command('version')
    .description('print the client and local server versions')
    .option('--state-dir <dir>', 'local mode state directory', defaultStateDir())
    .action(async (o: { stateDir: string }) => {
      const v = packageVersion();
      process.stdout.write(`Client Version: kubevirt-ts v${v} (kubevirt.io/v1)\n`);
      const server = await localRequest<{ component?: string }>(
        statePaths(o.stateDir).apiSocket,
        'GET',
        '/version',
      ).then(
        () => `Server Version: kubevirt-ts v${v} (local mode)`,
        () => 'Server Version: local mode is not running',
      );
      process.stdout.write(`${server}\n`);
    });
}
