/** `kubevirt-ts virt-handler` rejects flag values that would reach other processes, naming the flag. */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliBuilt, cliEntry } from '../../e2e/node-harness';
import { integration } from '../../support/integration';

const run = integration('virt-handler CLI', cliBuilt(), `${cliEntry()} is not built (npm run build)`);

const handler = (...args: string[]) =>
  spawnSync(
    process.execPath,
    [cliEntry(), 'virt-handler', '--store-socket', '/nonexistent/store.sock', ...args],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  );

describe.runIf(run)('kubevirt-ts virt-handler flags', () => {
  it('refuses a node name that is not a DNS subdomain', () => {
    const r = handler('--node-name', 'Node_1');
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe('error: --node-name: "Node_1" is not a DNS subdomain');
  });

  it.each([
    ['node-b:16509 --x', 'node-b:16509 --x'],
    ['qemu+tcp://node-b/system;reboot', 'qemu+tcp://node-b/system;reboot'],
    ['bad\naddress', 'bad\\naddress'],
  ])('refuses the migration address %j', (value, shown) => {
    const r = handler('--node-name', 'node-a', '--migration-address', value);
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(
      `error: --migration-address: "${shown}" is neither host[:port] nor a libvirt URI`,
    );
  });
});
