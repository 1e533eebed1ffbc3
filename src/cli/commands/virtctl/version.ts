/** `virtctl version`: the client's version and, when reachable, the local mode's. */
import type { Command } from 'commander';
import { projectVersion, servedGitVersion } from '../../../api/served-version';
import { localRequest } from '../../local/local-client';
import { defaultStateDir, statePaths } from '../../local/state-dir';

/** Registers `version`. */
export function registerVersionCommand(program: Command): void {
  program
    .command('version')
    .description('print the client and local server versions')
    .option('--state-dir <dir>', 'local mode state directory', defaultStateDir())
    .action(async (o: { stateDir: string }) => {
      const v = projectVersion();
      // The served KubeVirt release first (what upstream's virtctl compares), then what it is.
      const full = servedGitVersion(v);
      process.stdout.write(`Client Version: ${full} (kubevirt-ts ${v}, KubeVirt API kubevirt.io/v1)\n`);
      const server = await localRequest<{ component?: string }>(
        statePaths(o.stateDir).apiSocket,
        'GET',
        '/version',
      ).then(
        () => `Server Version: ${full} (kubevirt-ts ${v}, local mode)`,
        () => 'Server Version: local mode is not running',
      );
      process.stdout.write(`${server}\n`);
    });
}
