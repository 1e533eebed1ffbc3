import { describe, expect, it } from 'vitest';
import {
  type PrintableStatusInput,
  printableStatus,
} from '../../../../src/controllers/virt-controller/vm/printable-status';

const base: PrintableStatusInput = {
  vmDeleting: false,
  runStrategy: 'Always',
  setToStart: true,
  startExpected: false,
  stopExpected: false,
  consecutiveFailCount: 0,
};
const vmi = (phase: string, extra: Partial<NonNullable<PrintableStatusInput['vmi']>> = {}) => ({
  phase,
  deleting: false,
  migrating: false,
  conditions: [],
  ...extra,
});

describe('printableStatus (upstream setPrintableStatus precedence)', () => {
  it.each<[string, Partial<PrintableStatusInput>, string]>([
    ['no VMI, nothing expected', { runStrategy: 'Halted', setToStart: false }, 'Stopped'],
    ['no VMI, create expected', { startExpected: true }, 'Starting'],
    ['VMI pending', { vmi: vmi('Pending') }, 'Starting'],
    ['VMI unprocessed (no phase)', { vmi: vmi('') }, 'Starting'],
    ['VMI scheduling', { vmi: vmi('Scheduling') }, 'Starting'],
    ['VMI scheduled', { vmi: vmi('Scheduled') }, 'Starting'],
    ['VMI running', { vmi: vmi('Running') }, 'Running'],
    [
      'VMI running and paused',
      { vmi: vmi('Running', { conditions: [{ type: 'Paused', status: 'True' }] }) },
      'Paused',
    ],
    ['VMI migrating beats running', { vmi: vmi('Running', { migrating: true }) }, 'Migrating'],
    ['VMI being deleted', { vmi: vmi('Running', { deleting: true }) }, 'Stopping'],
    ['VMI delete expected', { vmi: vmi('Running'), stopExpected: true }, 'Stopping'],
    [
      'VM being deleted beats everything',
      { vmDeleting: true, vmi: vmi('Running', { deleting: true }) },
      'Terminating',
    ],
    ['VMI failed, no failures counted', { vmi: vmi('Failed') }, 'Stopped'],
    ['VMI failed early, in backoff', { vmi: vmi('Failed'), consecutiveFailCount: 2 }, 'CrashLoopBackOff'],
    ['no VMI, in backoff', { consecutiveFailCount: 1 }, 'CrashLoopBackOff'],
    ['no VMI, failures but Manual', { runStrategy: 'Manual', consecutiveFailCount: 1 }, 'Stopped'],
    [
      'pod unschedulable',
      {
        vmi: vmi('Scheduling', {
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
        }),
      },
      'ErrorUnschedulable',
    ],
    [
      'PVC not found',
      {
        vmi: vmi('Pending', {
          conditions: [{ type: 'Synchronized', status: 'False', reason: 'FailedPvcNotFound' }],
        }),
      },
      'ErrorPvcNotFound',
    ],
    [
      'image pull error',
      {
        vmi: vmi('Scheduling', {
          conditions: [{ type: 'Synchronized', status: 'False', reason: 'ErrImagePull' }],
        }),
      },
      'ErrImagePull',
    ],
    ['waiting for volume binding', { unboundPvc: true }, 'WaitingForVolumeBinding'],
    ['unbound PVC but not set to start', { unboundPvc: true, setToStart: false }, 'Stopped'],
    ['provisioning', { provisioning: true, vmi: vmi('Pending') }, 'Provisioning'],
    ['VMI in an unknown phase', { vmi: vmi('Unknown') }, 'Unknown'],
  ])('%s -> %s', (_n, input, expected) => {
    expect(printableStatus({ ...base, ...input })).toBe(expected);
  });
});
