/**
 * `virtctl start|stop|restart|migrate VM`. On a cluster, upstream's wire protocol: PUT of
 * the VM's `subresources.kubevirt.io` start/stop/restart/migrate with upstream's option
 * bodies, which virt-api serves. When the cluster serves no virt-api (and in local mode),
 * the same change those handlers make is made directly (virt-api's vm-lifecycle
 * functions): runStrategy Halted <-> Always, `status.stateChangeRequests` for Manual VMs
 * and restarts, a VirtualMachineInstanceMigration for migrate.
 */
import type { Command } from 'commander';
import {
  type LifecycleOptions,
  migrateVm,
  restartVm,
  startVm,
  stopVm,
} from '../../../controllers/virt-api/vm-lifecycle';
import { printable } from '../../local/progress';
import { NotServedError, type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

export { runStrategyOf } from '../../../controllers/virt-api/vm-lifecycle';

type Verb = 'start' | 'stop' | 'restart' | 'migrate';
const DIRECT = { start: startVm, stop: stopVm, restart: restartVm, migrate: migrateVm } as const;

/** Runs a lifecycle verb: the cluster's subresource when served, else the direct change. */
export async function lifecycle(
  t: Target,
  verb: Verb,
  name: string,
  o: LifecycleOptions = {},
): Promise<void> {
  if (t.kubeConfig) {
    try {
      await t.subresource('PUT', t.namespace, name, verb, o, 'virtualmachines');
      return;
    } catch (e) {
      if (!(e instanceof NotServedError)) throw e;
    }
  }
  // Its errors name the VM already.
  await DIRECT[verb](t.client, t.namespace, name, o);
}

/** Upstream's `--dry-run`: the options body's `dryRun: ["All"]`. */
const dryRun = (o: { dryRun?: boolean }): LifecycleOptions => (o.dryRun ? { dryRun: ['All'] } : {});

/** Registers start, stop, restart and migrate on a virtctl command tree. */
export function registerLifecycleCommands(program: Command): void {
  withTargetOptions(
    program
      .command('start')
      .description('start a VirtualMachine')
      .argument('<vm>')
      .option('--paused', "start it paused (the VMI's startStrategy Paused; unpause to run it)")
      .option('--dry-run', 'check the request without changing anything'),
  ).action((name: string, o: TargetOptions & { paused?: boolean; dryRun?: boolean }) =>
    withTarget(o, async (t) => {
      await lifecycle(t, 'start', name, { ...(o.paused ? { paused: true } : {}), ...dryRun(o) });
      process.stdout.write(`VM ${printable(name)} was scheduled to start${o.dryRun ? ' (dry run)' : ''}\n`);
    }),
  );
  withTargetOptions(
    program
      .command('stop')
      .description('stop a VirtualMachine')
      .argument('<vm>')
      .option('--grace-period <seconds>', 'termination grace period (needs --force)')
      .option('--force', 'allow --grace-period to shorten the graceful shutdown')
      .option('--dry-run', 'check the request without changing anything'),
  ).action((name: string, o: TargetOptions & { gracePeriod?: string; force?: boolean; dryRun?: boolean }) => {
    let grace: number | undefined;
    if (o.gracePeriod !== undefined) {
      if (!o.force) throw new Error('--grace-period needs --force');
      grace = Number(o.gracePeriod);
      if (!Number.isInteger(grace) || grace < 0) {
        throw new Error(
          `--grace-period: ${JSON.stringify(o.gracePeriod)} is not a whole number of seconds >= 0`,
        );
      }
    }
    return withTarget(o, async (t) => {
      await lifecycle(t, 'stop', name, {
        ...(grace !== undefined ? { gracePeriod: grace } : {}),
        ...dryRun(o),
      });
      process.stdout.write(`VM ${printable(name)} was scheduled to stop\n`);
    });
  });
  withTargetOptions(
    program.command('restart').description('restart a VirtualMachine').argument('<vm>'),
  ).action((name: string, o: TargetOptions) =>
    withTarget(o, async (t) => {
      await lifecycle(t, 'restart', name);
      process.stdout.write(`VM ${printable(name)} was scheduled to restart\n`);
    }),
  );
  withTargetOptions(
    program
      .command('migrate')
      .description("live-migrate a VirtualMachine's guest to another node")
      .argument('<vm>'),
  ).action((name: string, o: TargetOptions) =>
    withTarget(o, async (t) => {
      await lifecycle(t, 'migrate', name);
      process.stdout.write(`VM ${printable(name)} was scheduled to migrate\n`);
    }),
  );
}
