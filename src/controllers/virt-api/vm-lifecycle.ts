/**
 * The VirtualMachine subresources of virt-api: start, stop, restart, migrate and
 * expand-spec, as upstream's handlers change the VM: `spec.runStrategy` (Halted <->
 * Always; RerunOnFailure stops to Halted) or `status.stateChangeRequests` (Start, Stop
 * with the VMI's uid) for Manual VMs and restarts; migrate creates a
 * VirtualMachineInstanceMigration. virtctl's local mode calls the same functions.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { createInstancetypeCatalog } from '../../api/instancetype/catalog';
import { expandVirtualMachineSpec } from '../../api/instancetype/expand-spec';
import {
  VirtualMachineInstanceMigrationType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { conflict, HttpError, notFound } from './http-error';
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
    throw notFound('virtualmachine', name);
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
  // upstream's getChangeRequestJson: a lone Stop replaces what is pending; else one at a time.
  const loneStop = reqs.length === 1 && reqs[0]?.action === 'Stop';
  if (pending.length > 0 && !loneStop) {
    throw conflict(
      'virtualmachine',
      vm.metadata?.name ?? '',
      'unable to complete request: stop/start already underway',
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
  if (vmi && !vmi.metadata?.deletionTimestamp && !FINAL.includes(vmi.status?.phase ?? '')) {
    throw conflict('virtualmachine', name, 'VM is already running');
  }
  if (strategy === 'RerunOnFailure' && vmi?.status?.phase === 'Failed') {
    throw conflict('virtualmachine', name, 'RerunOnFailure does not support starting VM from failed state');
  }
  // Paused, as upstream: a Start request carrying `paused: "true"`, which virt-controller
  // turns into a VMI with spec.startStrategy Paused (for Halted it flips runStrategy first).
  const start = o.paused ? { action: 'Start', data: { paused: 'true' } } : { action: 'Start' };
  if (strategy === 'Halted' && !o.paused) await setRunStrategy(client, vm, 'Always', isDryRun(o));
  else if (strategy === 'Halted' || strategy === 'Manual' || strategy === 'RerunOnFailure')
    await addRequests(client, vm, [start], isDryRun(o));
  else throw conflict('virtualmachine', name, `${strategy} does not support manual start requests`);
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
  const dry = isDryRun(o);
  const live = vmi && !FINAL.includes(vmi.status?.phase ?? '');
  if (o.gracePeriod !== undefined && (!Number.isInteger(o.gracePeriod) || o.gracePeriod < 0)) {
    throw new HttpError(400, 'stopOptions.gracePeriod: a whole number of seconds >= 0 is required');
  }
  if ((strategy === 'Halted' || strategy === 'Manual' || strategy === 'RerunOnFailure') && !live) {
    throw conflict('virtualmachine', name, 'VM is not running');
  }
  // upstream: a Halted VM whose VMI still runs (stopping) only takes a shorter grace period.
  const old = vmi?.spec?.terminationGracePeriodSeconds;
  if (strategy === 'Halted' && (o.gracePeriod === undefined || (old !== undefined && o.gracePeriod >= old))) {
    throw conflict(
      'virtualmachine',
      name,
      'Halted only supports manual stop requests with a shorter graceperiod',
    );
  }
  if (o.gracePeriod !== undefined) {
    if (live && !dry) {
      await client.patch(
        VirtualMachineInstanceType,
        name,
        { spec: { terminationGracePeriodSeconds: o.gracePeriod } },
        { namespace: ns, type: 'merge' },
      );
    }
  }
  if (strategy === 'Manual' || strategy === 'RerunOnFailure') {
    await addRequests(client, vm, [{ action: 'Stop', uid: vmi?.metadata?.uid }], dry);
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
      'restartOptions.gracePeriodSeconds: For force restart, only gracePeriod=0 is supported for now',
    );
  const vm = await getVm(client, ns, name);
  const strategy = runStrategyOf(vm);
  if (strategy === 'Halted' || strategy === 'Once')
    throw conflict('virtualmachine', name, `RunStategy ${strategy} does not support manual restart requests`);
  const vmi = await getVmi(client, ns, name);
  if (!vmi) throw conflict('virtualmachine', name, 'VM is not running: Halted');
  // A forced restart, as upstream's: the VMI's grace period becomes 1 s (its shortest safe
  // restart period), so the handler ends the guest at once whichever pod delete comes first.
  if (g === 0 && !isDryRun(o)) {
    await client.patch(
      VirtualMachineInstanceType,
      name,
      { spec: { terminationGracePeriodSeconds: 1 } },
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
  if (!vmi) throw notFound('virtualmachineinstance', name);
  if (vmi.status?.phase !== 'Running') throw conflict('virtualmachine', name, 'VM is not running');
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

/**
 * The VM with its instance type and preference expanded into the template, and the
 * template defaulted as upstream's expand-spec does (../../api/instancetype/expand-spec).
 */
export async function expandVm(client: ObjectClient, vm: Vm, config: ClusterConfig): Promise<Vm> {
  const catalog = (await catalogForVm(client, vm)) ?? createInstancetypeCatalog([]);
  const { vm: expanded, errors } = expandVirtualMachineSpec(vm, catalog, config);
  if (errors.length > 0) {
    throw new HttpError(422, errors.map((e) => `${e.path}: ${e.message}`).join(', '));
  }
  return expanded as Vm;
}

/** `GET virtualmachines/{name}/expand-spec`. */
export async function expandSpec(
  client: ObjectClient,
  ns: string,
  name: string,
  config: ClusterConfig,
): Promise<Vm> {
  return expandVm(client, await getVm(client, ns, name), config);
}
