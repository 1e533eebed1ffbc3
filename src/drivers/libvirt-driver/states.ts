/**
 * libvirt's numeric domain states, state reasons and lifecycle event details, turned
 * into the driver contract's words (virDomainState, virDomain*Reason and
 * virDomainEvent*DetailType in libvirt-domain.h; the numbers are ABI).
 */
import type { DomainEvent, DomainState } from '../driver';

const STATES: DomainState[] = [
  'nostate',
  'running',
  'blocked',
  'paused',
  'shutdown',
  'shutoff',
  'crashed',
  'pmsuspended',
];

const REASONS: Record<DomainState, string[]> = {
  nostate: ['unknown'],
  running: [
    'unknown',
    'booted',
    'migrated',
    'restored',
    'from-snapshot',
    'unpaused',
    'migration-canceled',
    'save-canceled',
    'wakeup',
    'crashed',
    'postcopy',
    'postcopy-failed',
  ],
  blocked: ['unknown'],
  paused: [
    'unknown',
    'user',
    'migration',
    'save',
    'dump',
    'ioerror',
    'watchdog',
    'from-snapshot',
    'shutting-down',
    'snapshot',
    'starting-up',
    'postcopy',
    'postcopy-failed',
    'api-error',
  ],
  shutdown: ['unknown', 'user'],
  shutoff: [
    'unknown',
    'shutdown',
    'destroyed',
    'crashed',
    'migrated',
    'saved',
    'failed',
    'from-snapshot',
    'daemon',
  ],
  crashed: ['unknown', 'panicked'],
  pmsuspended: ['unknown'],
};

/** The state name of virDomainState `n`. */
export function stateName(n: number): DomainState {
  return STATES[n] ?? 'nostate';
}

/** The reason name of reason `n` in state `state`. */
export function reasonName(state: DomainState, n: number): string {
  return REASONS[state][n] ?? `reason-${n}`;
}

const DETAILS: Record<number, string[]> = {
  0: ['added', 'updated', 'renamed', 'from-snapshot'],
  1: ['removed', 'renamed'],
  2: ['booted', 'migrated', 'restored', 'from-snapshot', 'wakeup'],
  3: [
    'paused',
    'migrated',
    'ioerror',
    'watchdog',
    'restored',
    'from-snapshot',
    'api-error',
    'postcopy',
    'postcopy-failed',
  ],
  4: ['unpaused', 'migrated', 'from-snapshot', 'postcopy', 'postcopy-failed'],
  5: ['shutdown', 'destroyed', 'crashed', 'migrated', 'saved', 'failed', 'from-snapshot'],
  6: ['finished', 'guest', 'host'],
  7: ['memory', 'disk'],
  8: ['panicked', 'crashloaded'],
};

/** A lifecycle event (virDomainEventType `event`, detail `detail`) for domain `domain`. */
export function lifecycleToEvent(domain: string, event: number, detail: number): DomainEvent | undefined {
  const reason = DETAILS[event]?.[detail] ?? `detail-${detail}`;
  switch (event) {
    case 0:
      return { type: 'defined', domain, updated: detail === 1 };
    case 1:
      return { type: 'undefined', domain };
    case 2:
      return { type: 'started', domain, reason };
    case 3:
      return { type: 'paused', domain, reason };
    case 4:
      return { type: 'resumed', domain, reason };
    case 5:
      return { type: 'stopped', domain, reason };
    case 6:
      return { type: 'shutdown', domain, reason };
    case 7:
      return { type: 'pmsuspended', domain, reason };
    case 8:
      return { type: 'crashed', domain, reason };
    default:
      return undefined;
  }
}
