/**
 * The VirtualMachineInstance subresources of virt-api: checks on the VMI (it exists, it
 * runs, it is or is not paused), then the call goes to the virt-handler of its node
 * (pause, unpause, softreboot, reset, freeze, unfreeze, guest info, SEV; the screenshot
 * in ./vnc-screenshot), except `sev/setupsession`, which records the session on the VMI
 * as upstream does.
 */
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { unfreezeTimeoutSeconds } from '../common/unfreeze-timeout';
import { VirtualMachineInstanceType, VirtualMachineType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import type { HandlerClient } from './handler-client';
import { conflict, HttpError, notFound } from './http-error';
import { vncScreenshot } from './vnc-screenshot';

/** A VMI as read from the API server. */
export type Vmi = VirtualMachineInstance & KubeObject;

/** Reads a VMI or answers 404. */
export async function fetchVmi(client: ObjectClient, ns: string, name: string): Promise<Vmi> {
  try {
    return await client.get<Vmi>(VirtualMachineInstanceType, name, ns);
  } catch {
    throw notFound('virtualmachineinstance', name);
  }
}

/**
 * The VMI of VM `name` (upstream's FetchVirtualMachineInstanceForVM): the VM must exist
 * and have created its VMI, which it must own.
 */
export async function fetchVmiForVm(client: ObjectClient, ns: string, name: string): Promise<Vmi> {
  let vm: VirtualMachine & KubeObject;
  try {
    vm = await client.get<VirtualMachine & KubeObject>(VirtualMachineType, name, ns);
  } catch {
    throw notFound('virtualmachine', name);
  }
  if (!vm.status?.created) throw conflict('virtualmachine', name, 'VMI is not started');
  const vmi = await fetchVmi(client, ns, name);
  if (!(vmi.metadata?.ownerReferences ?? []).some((r) => r.uid === vm.metadata?.uid)) {
    throw new HttpError(500, `unable to retrieve vmi [${name}] for vm`);
  }
  return vmi;
}

/** upstream's texts for a VMI that does not run; which one depends on the subresource. */
const VM_NOT_RUNNING = 'VM is not running';
const VMI_NOT_RUNNING = 'VMI is not running';

/** Refuses a VMI that is not running (upstream: 409 Conflict, `why`). */
export function requireRunning(vmi: Vmi, why: string = VMI_NOT_RUNNING): void {
  if (vmi.status?.phase !== 'Running')
    throw conflict('virtualmachineinstance', vmi.metadata?.name ?? '', why);
}

const hasCondition = (vmi: Vmi, type: string) =>
  (vmi.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
const isPaused = (vmi: Vmi) => hasCondition(vmi, 'Paused');
const refuse = (vmi: Vmi, why: string) => conflict('virtualmachineinstance', vmi.metadata?.name ?? '', why);
const agentCheck = (vmi: Vmi) => {
  if (!hasCondition(vmi, 'AgentConnected')) throw refuse(vmi, 'VMI does not have guest agent connected');
};

/**
 * A freeze body's `unfreezeTimeout` is set and within what the launcher's safety-thaw
 * timer holds (../common/unfreeze-timeout): refused here with 400, as upstream's virt-api
 * refuses a freeze without it, rather than after a trip to the node.
 */
function checkFreezeBody(body: unknown): void {
  const t = (body as { unfreezeTimeout?: unknown } | null | undefined)?.unfreezeTimeout;
  if (t === undefined || t === null)
    throw new HttpError(400, 'Unfreeze timeout in freeze request is not set');
  try {
    unfreezeTimeoutSeconds(t);
  } catch (e) {
    throw new HttpError(400, (e as Error).message);
  }
}

/** Handler operations by subresource path: method, upstream's not-running text, checks. */
const FORWARDED: Record<string, { method: 'GET' | 'PUT'; notRunning?: string; check?: (vmi: Vmi) => void }> =
  {
    pause: {
      method: 'PUT',
      notRunning: VM_NOT_RUNNING,
      check: (vmi) => {
        if (isPaused(vmi)) throw refuse(vmi, 'VMI is already paused');
      },
    },
    unpause: {
      method: 'PUT',
      check: (vmi) => {
        if (!isPaused(vmi)) throw refuse(vmi, 'VMI is not paused');
      },
    },
    softreboot: {
      method: 'PUT',
      notRunning: VM_NOT_RUNNING,
      check: (vmi) => {
        if (isPaused(vmi)) throw refuse(vmi, 'VMI is paused');
        const acpi = vmi.spec?.domain?.features?.acpi?.enabled;
        if (!hasCondition(vmi, 'AgentConnected') && acpi === false)
          throw refuse(vmi, 'VMI neither have the agent connected nor the ACPI feature enabled');
      },
    },
    reset: { method: 'PUT' },
    // The body (upstream's FreezeUnfreezeTimeout) goes to the handler, which reads it.
    freeze: { method: 'PUT', notRunning: VM_NOT_RUNNING },
    unfreeze: { method: 'PUT' },
    guestosinfo: { method: 'GET', check: agentCheck },
    userlist: { method: 'GET', check: agentCheck },
    filesystemlist: { method: 'GET', check: agentCheck },
    'sev/fetchcertchain': { method: 'GET' },
    'sev/querylaunchmeasurement': { method: 'GET' },
    'sev/injectlaunchsecret': { method: 'PUT' },
  };

/** Whether `op` is a non-streaming VMI subresource this server answers. */
export function isVmiOperation(op: string): boolean {
  return Object.hasOwn(FORWARDED, op) || op === 'sev/setupsession' || op === 'vnc/screenshot';
}

/** Runs a non-streaming VMI subresource. */
export async function vmiOperation(
  client: ObjectClient,
  handlers: HandlerClient,
  method: string,
  ns: string,
  name: string,
  op: string,
  body: unknown,
  query: URLSearchParams = new URLSearchParams(),
): Promise<unknown> {
  if (op === 'vnc/screenshot') return vncScreenshot(client, handlers, method, ns, name, query);
  if (op === 'sev/setupsession') {
    if (method !== 'PUT') throw new HttpError(405, `${method} ${op}: use PUT`);
    const vmi = await fetchVmi(client, ns, name);
    const b = (body ?? {}) as { session?: unknown; dhCert?: unknown };
    if (typeof b.session !== 'string' || typeof b.dhCert !== 'string') {
      throw new HttpError(400, 'sev/setupsession: body needs string fields session and dhCert');
    }
    if (!vmi.spec?.domain?.launchSecurity?.sev) throw new HttpError(400, `VMI ${name} is not an SEV guest`);
    if (vmi.status?.phase && !['Pending', 'Scheduling', 'Scheduled'].includes(vmi.status.phase)) {
      throw new HttpError(409, `VMI ${name}: the SEV session is set before the guest starts`);
    }
    await client.patch(
      VirtualMachineInstanceType,
      name,
      { spec: { domain: { launchSecurity: { sev: { session: b.session, dhCert: b.dhCert } } } } },
      { namespace: ns, type: 'merge' },
    );
    return {};
  }
  // Own keys only: an op such as `constructor` must not find Object's.
  const f = Object.hasOwn(FORWARDED, op) ? FORWARDED[op] : undefined;
  if (!f) throw new HttpError(404, `subresource ${op} not found`);
  if (method !== f.method) throw new HttpError(405, `${method} ${op}: use ${f.method}`);
  if (op === 'unpause') {
    // upstream: a VM being snapshotted stays paused until the snapshot is done.
    const vm = await client
      .get<VirtualMachine & KubeObject>(VirtualMachineType, name, ns)
      .catch(() => undefined);
    if (vm?.status?.snapshotInProgress) throw conflict('virtualmachine', name, 'VM snapshot is in progress');
  }
  const vmi = await fetchVmi(client, ns, name);
  requireRunning(vmi, f.notRunning);
  f.check?.(vmi);
  if (op === 'freeze') checkFreezeBody(body);
  const dry = (body as { dryRun?: unknown } | undefined)?.dryRun;
  if (Array.isArray(dry) && dry.includes('All')) return {};
  return handlers.call(
    vmi.status?.nodeName,
    f.method,
    ns,
    name,
    op,
    f.method === 'PUT' ? (body ?? {}) : undefined,
  );
}
