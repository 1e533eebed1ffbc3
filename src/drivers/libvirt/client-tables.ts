/** The client's lookup tables (event ids and readers, procedure and auth names) and argument checks. */
import { LibvirtError, VIR_ERR_ERROR, VIR_ERR_INVALID_ARG, VIR_FROM_REMOTE } from './errors';
import type { EventStream } from './events';
import {
  QemuProc,
  REMOTE_AUTH_NONE,
  REMOTE_AUTH_POLKIT,
  REMOTE_AUTH_SASL,
  RemoteProc,
} from './protocol/constants';
import {
  type DomainEvent,
  DomainEventId,
  readAgentLifecycleEvent,
  readDeviceRemovedEvent,
  readLifecycleEvent,
  readRebootEvent,
} from './protocol/remote';
import type { DomainRef } from './protocol/types';
import type { XdrReader } from './xdr';

/** Which events a subscription delivers. */
export type DomainEventKind = DomainEvent['kind'];

/** The event id of each event kind (VIR_DOMAIN_EVENT_ID_*). */
export const EVENT_IDS: Record<DomainEventKind, number> = {
  lifecycle: DomainEventId.LIFECYCLE,
  reboot: DomainEventId.REBOOT,
  'device-removed': DomainEventId.DEVICE_REMOVED,
  'agent-lifecycle': DomainEventId.AGENT_LIFECYCLE,
};

/** The decoder of each event message procedure. */
export const EVENT_READERS: Record<number, (r: XdrReader) => DomainEvent> = {
  [RemoteProc.DOMAIN_EVENT_CALLBACK_LIFECYCLE]: readLifecycleEvent,
  [RemoteProc.DOMAIN_EVENT_CALLBACK_REBOOT]: readRebootEvent,
  [RemoteProc.DOMAIN_EVENT_CALLBACK_DEVICE_REMOVED]: readDeviceRemovedEvent,
  [RemoteProc.DOMAIN_EVENT_CALLBACK_AGENT_LIFECYCLE]: readAgentLifecycleEvent,
};

export type EventOf<K extends DomainEventKind> = Extract<DomainEvent, { kind: K }>;

export interface Subscription {
  kind: DomainEventKind;
  dom: DomainRef | null;
  stream: EventStream<DomainEvent>;
  /** The daemon's callbackID on the current connection; -1 while not registered. */
  callbackId: number;
}

/** Procedure names for error messages (REMOTE_PROC_ numbers to names). */
export const PROC_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(RemoteProc).map(([k, v]) => [v, `REMOTE_PROC_${k}`]),
);
/** QEMU program procedure names for error messages. */
export const QEMU_PROC_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(QemuProc).map(([k, v]) => [v, `QEMU_PROC_${k}`]),
);

/** Events whose callbackID is not known yet (they can beat the registration reply). */
export const MAX_ORPHAN_EVENTS = 256;
/** Wire bytes of events kept for a subscription not yet registered. */
export const MAX_ORPHAN_BYTES = 1024 * 1024;

/** Names of the daemon's auth types, for the authentication error. */
export const AUTH_NAMES: Record<number, string> = {
  [REMOTE_AUTH_NONE]: 'none',
  [REMOTE_AUTH_SASL]: 'sasl',
  [REMOTE_AUTH_POLKIT]: 'polkit',
};

/** Rejects user strings libvirt would refuse anyway, before they reach the wire. */
/** How long an agent command's call may wait: the agent's own timeout on top of the call bound. */
export function agentCallTimeout(callTimeoutMs: number, timeoutSec: number): number {
  if (callTimeoutMs === 0 || timeoutSec === -2) return 0;
  return callTimeoutMs + Math.max(0, timeoutSec) * 1000;
}

/** Refuses a string the wire cannot carry as given (NUL bytes). */
export function checkText(what: string, s: string): void {
  if (typeof s !== 'string') throw new TypeError(`${what}: expected a string, got ${typeof s}`);
  if (s.includes('\0')) {
    throw new LibvirtError({
      code: VIR_ERR_INVALID_ARG,
      domain: VIR_FROM_REMOTE,
      level: VIR_ERR_ERROR,
      message: `${what}: contains a NUL byte, which libvirt cannot carry`,
    });
  }
}
