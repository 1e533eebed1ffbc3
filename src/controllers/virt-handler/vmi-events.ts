/**
 * The Kubernetes events virt-handler records on a VMI, with upstream's reasons and
 * messages (pkg/virt-handler/vm.go): `Created` and `Started` when the guest first runs,
 * `ShuttingDown` when it asks for the graceful shutdown of a deleted VMI, `Stopped` when
 * the guest ends, `Deleted` when it tells the launcher to drop the domain. Plus the
 * launcher's own events (HandleK8sEvent), checked before they are recorded.
 */
import type { Logger } from 'pino';
import type { VirtualMachineInstance } from '../../api/generated/types';
import type { K8sEventNotification } from '../launcher-protocol';
import { vmiFields } from '../logging/logger';
import type { EventRecorder } from '../runtime/event-recorder';

/** One event to record. */
export interface VmiEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export const VMI_DEFINED: VmiEvent = {
  type: 'Normal',
  reason: 'Created',
  message: 'VirtualMachineInstance defined.',
};
export const VMI_STARTED: VmiEvent = {
  type: 'Normal',
  reason: 'Started',
  message: 'VirtualMachineInstance started.',
};
export const VMI_SHUTDOWN: VmiEvent = {
  type: 'Normal',
  reason: 'Stopped',
  message: 'The VirtualMachineInstance was shut down.',
};
export const VMI_GRACEFUL_SHUTDOWN: VmiEvent = {
  type: 'Normal',
  reason: 'ShuttingDown',
  message: 'Signaled Graceful Shutdown',
};
export const VMI_SIGNAL_DELETION: VmiEvent = {
  type: 'Normal',
  reason: 'Deleted',
  message: 'Signaled Deletion',
};

/** The events a status write from `old` to `next` stands for. */
export function phaseEvents(old: VirtualMachineInstance, next: VirtualMachineInstance): VmiEvent[] {
  const from = old.status?.phase;
  const to = next.status?.phase;
  if (from === to) return [];
  if (to === 'Running' && from !== 'Running') return [VMI_DEFINED, VMI_STARTED];
  if (to === 'Succeeded') return [VMI_SHUTDOWN];
  if (to === 'Failed')
    return [
      {
        type: 'Warning',
        reason: 'Stopped',
        message: next.status?.reason || 'The VirtualMachineInstance crashed.',
      },
    ];
  return [];
}

const REASON = /^[A-Za-z][A-Za-z0-9]{0,127}$/;

/**
 * A launcher's event, if it is well-formed and about `vmi` (same namespace, name and
 * uid: a launcher can only speak for its own VMI); else the problem.
 */
export function launcherEvent(
  raw: unknown,
  vmiOf: (namespace: string, name: string) => VirtualMachineInstance | undefined,
): { vmi: VirtualMachineInstance; event: VmiEvent } | { error: string } {
  const ev = raw as Partial<K8sEventNotification> | null;
  const o = ev?.involvedObject;
  if (!ev || (ev.type !== 'Normal' && ev.type !== 'Warning'))
    return { error: 'type must be Normal or Warning' };
  if (typeof ev.reason !== 'string' || !REASON.test(ev.reason))
    return { error: `reason ${JSON.stringify(ev.reason)} is not a CamelCase word` };
  if (typeof ev.message !== 'string') return { error: 'message must be a string' };
  if (o?.kind !== 'VirtualMachineInstance')
    return { error: 'involvedObject must be a VirtualMachineInstance' };
  const vmi = vmiOf(String(o.namespace), String(o.name));
  if (!vmi || vmi.metadata?.uid !== o.uid)
    return { error: `VirtualMachineInstance ${o.namespace}/${o.name} (uid ${o.uid}) is not on this node` };
  return { vmi, event: { type: ev.type, reason: ev.reason, message: ev.message } };
}

/**
 * Records `e` on the VMI and, with a logger, writes it as a line naming the VMI (kind,
 * namespace, name, uid) and the event's reason: warnings as warnings, the rest as info.
 */
export function recordVmiEvent(
  recorder: EventRecorder,
  logger: Logger | undefined,
  vmi: VirtualMachineInstance,
  e: VmiEvent,
): void {
  recorder.event(vmi as never, e.type, e.reason, e.message);
  logger?.[e.type === 'Warning' ? 'warn' : 'info']({ ...vmiFields(vmi), reason: e.reason }, e.message);
}
