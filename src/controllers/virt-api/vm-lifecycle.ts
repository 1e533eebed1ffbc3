/**
 * The VirtualMachine subresources of virt-api: start, stop, restart, migrate and
 * expand-spec, as upstream's handlers change the VM: `spec.runStrategy` (Halted <->
 * Always; RerunOnFailure stops to Halted) or `status.stateChangeRequests` (Start, Stop
 * with the VMI's uid) for Manual VMs and restarts; migrate creates a
 * VirtualMachineInstanceMigration. virtctl's local mode calls the same functions.
 */
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { createInstancetypeCatalog } from '../../api/instancetype/catalog';
import { expandVirtualMachine } from '../../api/instancetype/expand';
import {
  VirtualMachineInstanceMigrationType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { HttpError } from './http-error';
import { catalogForVm } from './instancetype-lookup';

type Vm = VirtualMachine & KubeObject;
type Vmi = VirtualMachineInstance & KubeObject;

const FINAL = ['Succeeded', 'Failed'];

/** The runStrategy a VM behaves by (the deprecated `running` maps as upstream). */
export function runStrategyOf(vm: VirtualMachine): string {
  if (vm.spec?.runStrategy) return vm.spec.runStrategy;
  return vm.spec?.running ? 'Always' : 'Halted';
}

async function getVm(client: ObjectClient, ns: string, name: string): Promise<Vm> {
  try {
    return await client.get<Vm>(VirtualMachineType, name, ns);
  } catch {
    throw new HttpError(404, `VirtualMachine ${ns}/${name} not found`);
  }
}

function getVmi(client: ObjectClient, ns: string, name: string): Promise<Vmi | undefined> {
  return client.get<Vmi>(VirtualMachineInstanceType, name, ns).catch(() => undefined);
}

async function setRunStrategy(
  client: ObjectClient,
  vm: Vm,
  runStrategy: string,
  dryRun: boolean,
): Promise<void> {
  if (dryRun) return;
  // `running` and `runStrategy` are mutually exclusive: drop `running` when set.
  const spec: Record<string, unknown> = { runStrategy };
  if (vm.spec?.running !== undefined) spec.running = null;
  await client.patch(
    VirtualMachineType,
    vm.metadata?.name ?? '',
    { spec },
    { namespace: vm.metadata?.namespace, type: 'merge' },
  );
}

async function addRequests(
  client: ObjectClient,
  vm: Vm,
  reqs: Array<{ action: string; uid?: string; data?: Record<string, string> }>,
  dryRun: boolean,
): Promise<void> {
  const pending = vm.status?.stateChangeRequests ?? [];
  if (pending.length > 0) {
    throw new HttpError(
      409,
      `VirtualMachine ${vm.metadata?.namespace}/${vm.metadata?.name}: a previous ${pending[0]?.action} request is still pending`,
    );
  }
  if (dryRun) return;
  await client.patch(
    VirtualMachineType,
    vm.metadata?.name ?? '',
    { status: { stateChangeRequests: reqs } },
    { namespace: vm.metadata?.namespace, type: 'merge', subresource: 'status' },
  );
}

/** Options bodies (upstream's StartOptions, StopOptions, RestartOptions, MigrateOptions). */
export interface LifecycleOptions {
  dryRun?: string[];
  gracePeriod?: number;
  gracePeriodSeconds?: number;
  paused?: boolean;
  addedNodeSelector?: Record<string, string>;
}

const isDryRun = (o: LifecycleOptions) => Array.isArray(o.dryRun) && o.dryRun.includes('All');

/** Starts a VM. */
export async function startVm(
  client: ObjectClient,
  ns: string,
  name: string,
  o: LifecycleOptions = {},
): Promise<void> {
  if (o.paused !== undefined && typeof o.paused !== 'boolean')
    throw new HttpError(400, 'startOptions.paused: must be true or false');
  const vm = await getVm(client, ns, name);
  const strategy = runStrategyOf(vm);
  const vmi = await getVmi(client, ns, name);
  const id = `${ns}/${name}`;
  if (vmi && !vmi.metadata?.deletionTimestamp && !FINAL.includes(vmi.status?.phase ?? '')) {
    throw new HttpError(409, `VirtualMachine ${id} is already running`);
  }
  // Paused, as upstream: a Start request carrying `paused: "true"`, which virt-controller
  // turns into a VMI with spec.startStrategy Paused (for Halted it flips runStrategy first).
  const start = o.paused ? { action: 'Start', data: { paused: 'true' } } : { action: 'Start' };
  if (strategy === 'Halted' && !o.paused) await setRunStrategy(client, vm, 'Always', isDryRun(o));
  else if (strategy === 'Halted' || strategy === 'Manual' || strategy === 'RerunOnFailure')
    await addRequests(client, vm, [start], isDryRun(o));
  else throw new HttpError(409, `VirtualMachine ${id}: ${strategy} does not support manual start requests`);
}

/** Stops a VM; with a grace period, the VMI's termination grace period is lowered first. */
export async function stopVm(
  client: ObjectClient,
  ns: string,
  name: string,
  o: LifecycleOptions = {},
): Promise<void> {
  const vm = await getVm(client, ns, name);
  const strategy = runStrategyOf(vm);
  const vmi = await getVmi(client, ns, name);
  const id = `${ns}/${name}`;
  const dry = isDryRun(o);
  if (strategy === 'Halted' && !vmi) throw new HttpError(409, `VirtualMachine ${id} is not running`);
  if (o.gracePeriod !== undefined) {
    if (!Number.isInteger(o.gracePeriod) || o.gracePeriod < 0) {
      throw new HttpError(400, 'stopOptions.gracePeriod: a whole number of seconds >= 0 is required');
    }
    if (vmi && !dry) {
      await client.patch(
        VirtualMachineInstanceType,
        name,
        { spec: { terminationGracePeriodSeconds: o.gracePeriod } },
        { namespace: ns, type: 'merge' },
      );
    }
  }
  if (strategy === 'Manual') {
    if (!vmi) throw new HttpError(409, `VirtualMachine ${id} is not running`);
    await addRequests(client, vm, [{ action: 'Stop', uid: vmi.metadata?.uid }], dry);
  } else if (strategy !== 'Halted') await setRunStrategy(client, vm, 'Halted', dry);
  else if (vmi && !dry) await client.delete(VirtualMachineInstanceType, name, { namespace: ns });
}

/** Restarts a VM: stop its current VMI, then start a new one (as upstream's restart). */
export async function restartVm(
  client: ObjectClient,
  ns: string,
  name: string,
  o: LifecycleOptions = {},
): Promise<void> {
  // upstream's restart takes only a forced one (0), and refuses a grace period otherwise.
  const g = o.gracePeriodSeconds;
  if (g !== undefined && (!Number.isInteger(g) || g < 0))
    throw new HttpError(
      400,
      'restartOptions.gracePeriodSeconds: gracePeriod has to be greater or equal to 0',
    );
  if (g !== undefined && g > 0)
    throw new HttpError(
      400,
      'restartOptions.gracePeriodSeconds: for force restart, only gracePeriod=0 is supported',
    );
  const vm = await getVm(client, ns, name);
  const vmi = await getVmi(client, ns, name);
  if (runStrategyOf(vm) === 'Halted' || !vmi)
    throw new HttpError(409, `VirtualMachine ${ns}/${name} is not running`);
  if (o.gracePeriodSeconds !== undefined && !isDryRun(o)) {
    await client.patch(
      VirtualMachineInstanceType,
      name,
      { spec: { terminationGracePeriodSeconds: o.gracePeriodSeconds } },
      { namespace: ns, type: 'merge' },
    );
  }
  await addRequests(
    client,
    vm,
    [{ action: 'Stop', uid: vmi.metadata?.uid }, { action: 'Start' }],
    isDryRun(o),
  );
}

/** Creates a migration of the VM's VMI (upstream's `kubevirt-migrate-vm-` generated name). */
export async function migrateVm(
  client: ObjectClient,
  ns: string,
  name: string,
  o: LifecycleOptions = {},
): Promise<KubeObject | undefined> {
  await getVm(client, ns, name);
  const vmi = await getVmi(client, ns, name);
  if (vmi?.status?.phase !== 'Running') throw new HttpError(409, `VM ${ns}/${name} is not running`);
  const migration: KubeObject & { spec: Record<string, unknown> } = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstanceMigration',
    metadata: { generateName: 'kubevirt-migrate-vm-', namespace: ns },
    spec: { vmiName: name, ...(o.addedNodeSelector ? { addedNodeSelector: o.addedNodeSelector } : {}) },
  };
  return client.create(
    VirtualMachineInstanceMigrationType,
    migration,
    isDryRun(o) ? { dryRun: true } : undefined,
  );
}

/** The VM with its instance type and preference expanded into the template. */
export async function expandVm(client: ObjectClient, vm: Vm): Promise<Vm> {
  const catalog = (await catalogForVm(client, vm)) ?? createInstancetypeCatalog([]);
  const { vm: expanded, errors } = expandVirtualMachine(vm, catalog);
  if (errors.length > 0) {
    throw new HttpError(422, errors.map((e) => `${e.path}: ${e.message}`).join(', '));
  }
  return expanded as Vm;
}

/** `GET virtualmachines/{name}/expand-spec`. */
export async function expandSpec(client: ObjectClient, ns: string, name: string): Promise<Vm> {
  return expandVm(client, await getVm(client, ns, name));
}
