/**
 * The VirtualMachineInstance subresources of virt-api: checks on the VMI (it exists, it
 * runs, it is or is not paused), then the call goes to the virt-handler of its node
 * (pause, unpause, softreboot, reset, freeze, unfreeze, guest info, SEV; the screenshot
 * in ./vnc-screenshot), except `sev/setupsession`, which records the session on the VMI
 * as upstream does.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import { unfreezeTimeoutSeconds } from '../common/unfreeze-timeout';
import { VirtualMachineInstanceType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import type { HandlerClient } from './handler-client';
import { HttpError } from './http-error';
import { vncScreenshot } from './vnc-screenshot';

/** A VMI as read from the API server. */
export type Vmi = VirtualMachineInstance & KubeObject;

/** Reads a VMI or answers 404. */
export async function fetchVmi(client: ObjectClient, ns: string, name: string): Promise<Vmi> {
  try {
    return await client.get<Vmi>(VirtualMachineInstanceType, name, ns);
  } catch {
    throw new HttpError(404, `virtualmachineinstance.kubevirt.io "${name}" not found`);
  }
}

/** Refuses a VMI that is not running (upstream: 409 Conflict, "VMI is not running"). */
export function requireRunning(vmi: Vmi): void {
  if (vmi.status?.phase !== 'Running') throw new HttpError(409, `VMI ${vmi.metadata?.name} is not running`);
}

const isPaused = (vmi: Vmi) =>
  (vmi.status?.conditions ?? []).some((c) => c.type === 'Paused' && c.status === 'True');

/** Handler operations by method and subresource path. */
const FORWARDED: Record<string, { method: 'GET' | 'PUT'; check?: (vmi: Vmi) => void }> = {
  pause: {
    method: 'PUT',
    check: (vmi) => {
      if (isPaused(vmi)) throw new HttpError(409, `VMI ${vmi.metadata?.name} is already paused`);
    },
  },
  unpause: {
    method: 'PUT',
    check: (vmi) => {
      if (!isPaused(vmi)) throw new HttpError(409, `VMI ${vmi.metadata?.name} is not paused`);
    },
  },
  softreboot: {
    method: 'PUT',
    check: (vmi) => {
      if (isPaused(vmi)) throw new HttpError(409, `VMI ${vmi.metadata?.name} is paused`);
    },
  },
  reset: { method: 'PUT' },
  // The body (upstream's FreezeUnfreezeTimeout) goes to the handler, which reads it.
  freeze: { method: 'PUT' },
  unfreeze: { method: 'PUT' },
  guestosinfo: { method: 'GET' },
  userlist: { method: 'GET' },
  filesystemlist: { method: 'GET' },
  'sev/fetchcertchain': { method: 'GET' },
  'sev/querylaunchmeasurement': { method: 'GET' },
  'sev/injectlaunchsecret': { method: 'PUT' },
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

/** Whether `op` is a non-streaming VMI subresource this server answers. */
export function isVmiOperation(op: string): boolean {
  return op in FORWARDED || op === 'sev/setupsession' || op === 'vnc/screenshot';
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
  const f = FORWARDED[op];
  if (!f) throw new HttpError(404, `subresource ${op} not found`);
  if (method !== f.method) throw new HttpError(405, `${method} ${op}: use ${f.method}`);
  const vmi = await fetchVmi(client, ns, name);
  requireRunning(vmi);
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
