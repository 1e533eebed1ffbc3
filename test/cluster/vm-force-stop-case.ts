/**
 * `virtctl stop --force --grace-period=0` on the real one-node cluster, run by
 * vm-tiny.test.ts: a running VM and a paused one (a paused guest cannot answer ACPI; paused
 * through its launcher's socket, as virt-handler does, for this install has no virt-api), both
 * with a 180 s termination grace period, end within seconds, as upstream's do: virt-api
 * sets the VMI's grace period to 0, the handler kills the domain at once, the launcher
 * pod goes. (Before, the launcher read 0 as "unset" and waited out the pod's 180 s.)
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { repoRoot } from '../../scripts/gen-api';
import { LauncherClient } from '../../src/controllers/launcher-protocol';
import { podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { waitFor } from '../support/wait';
import { type ClusterVmContext, deleteVm, startVm, vmManifest } from './vm-network-cases';

/** Registers the forced-stop cases; `ctx` is read when they run. */
export function registerForceStopCases(ctx: () => ClusterVmContext): void {
  const virtctl = (c: ClusterVmContext, ...args: string[]) =>
    execFileSync(
      process.execPath,
      [
        join(repoRoot, 'dist', 'cli', 'virtctl.js'),
        ...args,
        '-n',
        c.namespace,
        '--kubeconfig',
        c.info.kubeconfigPath,
      ],
      { encoding: 'utf8' },
    );

  for (const paused of [false, true]) {
    const what = paused ? 'a paused VM' : 'a running VM';
    it(`virtctl stop --force --grace-period=0 of ${what} with a 180 s grace period ends the guest within seconds`, async () => {
      const c = ctx();
      const name = paused ? 'vm-force-paused' : 'vm-force-running';
      const vm = JSON.parse(
        vmManifest(name, c.namespace, [{ name: 'default', masquerade: {} }], [{ name: 'default', pod: {} }]),
      );
      vm.spec.template.spec.terminationGracePeriodSeconds = 180;
      const started = await startVm(c, name, JSON.stringify(vm));
      started.con.close();
      try {
        if (paused) {
          // The install here has no virt-api (so no `virtctl pause`): pause the domain as
          // virt-handler does, through the launcher's command socket in the pod's sockets dir.
          const sock = join(
            shortDir(
              podEmptyDirPath(
                join(c.info.stateDir, 'kubelet', 'pods'),
                started.launcher.metadata?.uid ?? '',
                'sockets',
              ),
            ),
            'launcher-sock',
          );
          const launcher = new LauncherClient(sock, { timeoutMs: 30_000 });
          try {
            await launcher.pauseVirtualMachine(await started.readVmi());
          } finally {
            launcher.close();
          }
          await waitFor(
            `VMI ${name} Paused`,
            async () =>
              (await started.readVmi()).status?.conditions?.some(
                (x) => x.type === 'Paused' && x.status === 'True',
              )
                ? true
                : undefined,
            60_000,
            500,
          );
        }
        const qemu = execFileSync('pgrep', ['-f', `guest=${c.namespace}_${name},`], {
          encoding: 'utf8',
        }).trim();
        const t0 = Date.now();
        expect(virtctl(c, 'stop', name, '--force', '--grace-period', '0')).toBe(
          `VM ${name} was scheduled to stop\n`,
        );
        await waitFor(
          `QEMU of ${name} gone`,
          () => {
            try {
              execFileSync('kill', ['-0', qemu]);
              return undefined;
            } catch {
              return true;
            }
          },
          170_000,
          250,
        );
        const guestGone = (Date.now() - t0) / 1000;
        await waitFor(
          `VMI ${name} gone`,
          async () => ((await started.readVmi().catch(() => undefined)) ? undefined : true),
          170_000,
          500,
        );
        const vmiGone = (Date.now() - t0) / 1000;
        process.stdout.write(
          `force stop of ${what}: QEMU gone after ${guestGone.toFixed(1)} s, VMI gone after ${vmiGone.toFixed(1)} s\n`,
        );
        expect(guestGone).toBeLessThan(30);
        expect(vmiGone).toBeLessThan(30);
      } finally {
        await deleteVm(c, name);
      }
    }, 600_000);
  }
}
