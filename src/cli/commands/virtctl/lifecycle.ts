/**
 * `virtctl start|stop|restart VM`. Upstream's virtctl calls the VM's start/stop/restart
 * subresources, whose handlers in virt-api change the VM; this does the same change
 * directly, so it works on local mode and on any cluster with the VM CRD: Halted <->
 * Always for runStrategy VMs (RerunOnFailure stops to Halted), and
 * `status.stateChangeRequests` (Start, Stop with the VMI's uid) for Manual and restart.
 */
import type { Command } from 'commander';
import type { VirtualMachine, VirtualMachineInstance } from '../../../api/generated/types';
import { VirtualMachineType } from '../../../controllers/runtime/resources';
import type { KubeObject } from '../../../controllers/runtime/types';
import { VmiResource } from '../../../controllers/virt-controller/vmi/controller';
import { printable } from '../../local/progress';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

type Vm = VirtualMachine & KubeObject;
type Vmi = VirtualMachineInstance & KubeObject;

/** The runStrategy a VM behaves by (the deprecated `running` maps as upstream). */
export function runStrategyOf(vm: VirtualMachine): string {
  if (vm.spec?.runStrategy) return vm.spec.runStrategy;
  return vm.spec?.running ? 'Always' : 'Halted';
}

async function getVm(t: Target, ns: string, name: string): Promise<Vm> {
  try {
    return await t.client.get<Vm>(VirtualMachineType, name, ns);
  } catch (e) {
    throw new Error(`VirtualMachine ${printable(`${ns}/${name}`)}: ${(e as Error).message}`);
  }
}

async function getVmi(t: Target, ns: string, name: string): Promise<Vmi | undefined> {
  return t.client.get<Vmi>(VmiResource, name, ns).catch(() => undefined);
}

async function setRunStrategy(t: Target, vm: Vm, runStrategy: string): Promise<void> {
  // `running` and `runStrategy` are mutually exclusive: drop `running` when set.
  const spec: Record<string, unknown> = { runStrategy };
  if (vm.spec?.running !== undefined) spec.running = null;
  await t.client.patch(
    VirtualMachineType,
    vm.metadata?.name ?? '',
    { spec },
    {
      namespace: vm.metadata?.namespace,
      type: 'merge',
    },
  );
}

async function addRequests(t: Target, vm: Vm, reqs: Array<{ action: string; uid?: string }>): Promise<void> {
  const pending = vm.status?.stateChangeRequests ?? [];
  if (pending.length > 0) {
    throw new Error(
      `VirtualMachine ${printable(`${vm.metadata?.namespace}/${vm.metadata?.name}`)}: a previous ${pending[0]?.action} request is still pending`,
    );
  }
  await t.client.patch(
    VirtualMachineType,
    vm.metadata?.name ?? '',
    { status: { stateChangeRequests: reqs } },
    { namespace: vm.metadata?.namespace, type: 'merge', subresource: 'status' },
  );
}

/** Starts a VM. */
export async function startVm(t: Target, ns: string, name: string): Promise<void> {
  const vm = await getVm(t, ns, name);
  const strategy = runStrategyOf(vm);
  const vmi = await getVmi(t, ns, name);
  const id = printable(`${ns}/${name}`);
  if (vmi && !vmi.metadata?.deletionTimestamp && !['Succeeded', 'Failed'].includes(vmi.status?.phase ?? '')) {
    throw new Error(`VirtualMachine ${id} is already running`);
  }
  if (strategy === 'Halted') await setRunStrategy(t, vm, 'Always');
  else if (strategy === 'Manual') await addRequests(t, vm, [{ action: 'Start' }]);
  else throw new Error(`VirtualMachine ${id}: runStrategy ${strategy} starts it on its own`);
}

/** Stops a VM; with a grace period, the VMI's termination grace period is lowered first (needs --force). */
export async function stopVm(t: Target, ns: string, name: string, gracePeriod?: number): Promise<void> {
  const vm = await getVm(t, ns, name);
  const strategy = runStrategyOf(vm);
  const vmi = await getVmi(t, ns, name);
  const id = printable(`${ns}/${name}`);
  if (strategy === 'Halted' && !vmi) throw new Error(`VirtualMachine ${id} is not running`);
  if (gracePeriod !== undefined && vmi) {
    await t.client.patch(
      VmiResource,
      name,
      { spec: { terminationGracePeriodSeconds: gracePeriod } },
      {
        namespace: ns,
        type: 'merge',
      },
    );
  }
  if (strategy === 'Manual') {
    if (!vmi) throw new Error(`VirtualMachine ${id} is not running`);
    await addRequests(t, vm, [{ action: 'Stop', uid: vmi.metadata?.uid }]);
  } else if (strategy !== 'Halted') await setRunStrategy(t, vm, 'Halted');
  else if (vmi) await t.client.delete(VmiResource, name, { namespace: ns });
}

/** Restarts a VM: stop its current VMI, then start a new one (as upstream's restart). */
export async function restartVm(t: Target, ns: string, name: string): Promise<void> {
  const vm = await getVm(t, ns, name);
  const vmi = await getVmi(t, ns, name);
  const id = printable(`${ns}/${name}`);
  if (runStrategyOf(vm) === 'Halted' || !vmi) throw new Error(`VirtualMachine ${id} is not running`);
  await addRequests(t, vm, [{ action: 'Stop', uid: vmi.metadata?.uid }, { action: 'Start' }]);
}

/** Registers start, stop and restart on a virtctl command tree. */
export function registerLifecycleCommands(program: Command): void {
  withTargetOptions(program.command('start').description('start a VirtualMachine').argument('<vm>')).action(
    (name: string, o: TargetOptions) =>
      withTarget(o, async (t) => {
        await startVm(t, t.namespace, name);
        process.stdout.write(`VM ${printable(name)} was scheduled to start\n`);
      }),
  );
  withTargetOptions(
    program
      .command('stop')
      .description('stop a VirtualMachine')
      .argument('<vm>')
      .option('--grace-period <seconds>', 'termination grace period (needs --force)')
      .option('--force', 'allow --grace-period to shorten the graceful shutdown'),
  ).action((name: string, o: TargetOptions & { gracePeriod?: string; force?: boolean }) => {
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
      await stopVm(t, t.namespace, name, grace);
      process.stdout.write(`VM ${printable(name)} was scheduled to stop\n`);
    });
  });
  withTargetOptions(
    program.command('restart').description('restart a VirtualMachine').argument('<vm>'),
  ).action((name: string, o: TargetOptions) =>
    withTarget(o, async (t) => {
      await restartVm(t, t.namespace, name);
      process.stdout.write(`VM ${printable(name)} was scheduled to restart\n`);
    }),
  );
}
