import { describe, expect, it } from 'vitest';
import {
  decideRunStrategy,
  effectiveRunStrategy,
  firstRequestDone,
  isSetToStart,
  type RunStrategyDecision,
  RunStrategyError,
  type RunStrategyInput,
} from '../../../../src/controllers/virt-controller/vm/run-strategy';

const running = { uid: 'u1', phase: 'Running', deleting: false };
const failed = { uid: 'u1', phase: 'Failed', deleting: false };
const succeeded = { uid: 'u1', phase: 'Succeeded', deleting: false };
const deleting = { uid: 'u1', phase: 'Running', deleting: true };
const stopU1 = [{ action: 'Stop', uid: 'u1' }];
const stopOther = [{ action: 'Stop', uid: 'u0' }];
const startReq = [{ action: 'Start' }];
const startPaused = [{ action: 'Start', data: { paused: 'true' } }];

type Row = [string, Partial<RunStrategyInput>, RunStrategyDecision];
const rows: Row[] = [
  // Always
  ['Always, no VMI: start', { runStrategy: 'Always' }, { action: 'start', paused: false }],
  [
    'Always, no VMI, in backoff: wait',
    { runStrategy: 'Always', backoffSecondsLeft: 42 },
    { action: 'wait', retryAfterSeconds: 42 },
  ],
  ['Always, running: nothing', { runStrategy: 'Always', vmi: running }, { action: 'none' }],
  [
    'Always, failed: stop (to restart)',
    { runStrategy: 'Always', vmi: failed },
    { action: 'stop', reason: 'VMI is Failed' },
  ],
  [
    'Always, succeeded: stop (to restart)',
    { runStrategy: 'Always', vmi: succeeded },
    { action: 'stop', reason: 'VMI is Succeeded' },
  ],
  [
    'Always, stop request for this VMI: restart',
    { runStrategy: 'Always', vmi: running, stateChangeRequests: stopU1 },
    { action: 'stop', reason: 'restart requested' },
  ],
  [
    'Always, stop request for an older VMI: nothing',
    { runStrategy: 'Always', vmi: running, stateChangeRequests: stopOther },
    { action: 'none' },
  ],
  [
    'Always, VMI being deleted: nothing',
    { runStrategy: 'Always', vmi: { ...failed, deleting: true } },
    { action: 'none' },
  ],
  ['running=true behaves as Always', { running: true }, { action: 'start', paused: false }],
  [
    'Always, start-paused request: start paused',
    { runStrategy: 'Always', stateChangeRequests: startPaused },
    { action: 'start', paused: true },
  ],
  // RerunOnFailure
  [
    'RerunOnFailure, no VMI, first sync: start',
    { runStrategy: 'RerunOnFailure' },
    { action: 'start', paused: false },
  ],
  [
    'RerunOnFailure, no VMI, already synced: nothing',
    { runStrategy: 'RerunOnFailure', statusRunStrategy: 'RerunOnFailure' },
    { action: 'none' },
  ],
  [
    'RerunOnFailure, no VMI, start request: start',
    { runStrategy: 'RerunOnFailure', statusRunStrategy: 'RerunOnFailure', stateChangeRequests: startReq },
    { action: 'start', paused: false },
  ],
  [
    'RerunOnFailure, failed: stop and request a start',
    { runStrategy: 'RerunOnFailure', vmi: failed },
    { action: 'stop', reason: 'VMI is Failed', thenRequestStart: true },
  ],
  [
    'RerunOnFailure, succeeded: stop, no restart',
    { runStrategy: 'RerunOnFailure', vmi: succeeded },
    { action: 'stop', reason: 'VMI is Succeeded', thenRequestStart: false },
  ],
  [
    'RerunOnFailure, stop request: stop',
    { runStrategy: 'RerunOnFailure', vmi: running, stateChangeRequests: stopU1 },
    { action: 'stop', reason: 'stop requested', thenRequestStart: false },
  ],
  ['RerunOnFailure, running: nothing', { runStrategy: 'RerunOnFailure', vmi: running }, { action: 'none' }],
  [
    'RerunOnFailure, in backoff: wait',
    { runStrategy: 'RerunOnFailure', stateChangeRequests: startReq, backoffSecondsLeft: 7 },
    { action: 'wait', retryAfterSeconds: 7 },
  ],
  // Manual
  ['Manual, no VMI: nothing', { runStrategy: 'Manual' }, { action: 'none' }],
  [
    'Manual, start request: start',
    { runStrategy: 'Manual', stateChangeRequests: startReq },
    { action: 'start', paused: false },
  ],
  [
    'Manual, start request ignores backoff',
    { runStrategy: 'Manual', stateChangeRequests: startReq, backoffSecondsLeft: 99 },
    { action: 'start', paused: false },
  ],
  ['Manual, running: nothing', { runStrategy: 'Manual', vmi: running }, { action: 'none' }],
  ['Manual, failed stays: nothing', { runStrategy: 'Manual', vmi: failed }, { action: 'none' }],
  [
    'Manual, stop request: stop',
    { runStrategy: 'Manual', vmi: running, stateChangeRequests: stopU1 },
    { action: 'stop', reason: 'stop requested' },
  ],
  // Halted
  ['Halted, no VMI: nothing', { runStrategy: 'Halted' }, { action: 'none' }],
  [
    'Halted, running: stop',
    { runStrategy: 'Halted', vmi: running },
    { action: 'stop', reason: 'runStrategy is Halted' },
  ],
  ['Halted, VMI deleting: nothing', { runStrategy: 'Halted', vmi: deleting }, { action: 'none' }],
  [
    'Halted, start request: switch to Always',
    { runStrategy: 'Halted', stateChangeRequests: startReq },
    { action: 'setRunStrategyAlways' },
  ],
  [
    'running=false behaves as Halted',
    { running: false, vmi: running },
    { action: 'stop', reason: 'runStrategy is Halted' },
  ],
  ['neither set behaves as Halted', {}, { action: 'none' }],
  // Once
  ['Once, no VMI: start', { runStrategy: 'Once' }, { action: 'start', paused: false }],
  ['Once, failed: nothing (never restarted)', { runStrategy: 'Once', vmi: failed }, { action: 'none' }],
  ['Once, running: nothing', { runStrategy: 'Once', vmi: running }, { action: 'none' }],
];

describe('decideRunStrategy (upstream syncRunStrategy)', () => {
  it.each(rows)('%s', (_name, input, expected) => {
    expect(decideRunStrategy({ backoffSecondsLeft: 0, ...input })).toEqual(expected);
  });
});

describe('effectiveRunStrategy', () => {
  it('rejects running together with runStrategy, naming the field', () => {
    expect(() => effectiveRunStrategy({ running: true, runStrategy: 'Always' })).toThrow(RunStrategyError);
    expect(() => effectiveRunStrategy({ running: true, runStrategy: 'Always' })).toThrow(
      /spec\.running: .*mutually exclusive/,
    );
  });
  it('rejects an unknown strategy', () => {
    expect(() => effectiveRunStrategy({ runStrategy: 'Sometimes' })).toThrow(
      /spec\.runStrategy: unknown run strategy "Sometimes"/,
    );
  });
});

describe('isSetToStart', () => {
  it.each([
    [{ runStrategy: 'Always' }, true],
    [{ runStrategy: 'Halted' }, false],
    [{ runStrategy: 'Manual' }, false],
    [{ runStrategy: 'Manual', stateChangeRequests: startReq }, true],
    [{ runStrategy: 'Manual', vmi: running }, true],
    [{ runStrategy: 'Manual', vmi: running, stateChangeRequests: stopU1 }, false],
    [{ runStrategy: 'RerunOnFailure', vmi: succeeded }, false],
    [{ runStrategy: 'RerunOnFailure', vmi: failed }, true],
    [{ runStrategy: 'Once' }, true],
    [{ runStrategy: 'Once', vmi: running }, false],
  ])('%j -> %s', (input, expected) => {
    expect(isSetToStart(input)).toBe(expected);
  });
});

describe('firstRequestDone (upstream isTrimFirstChangeRequestNeeded)', () => {
  it.each([
    ['no requests', undefined, running, false],
    ['stop, no VMI left', stopU1, undefined, true],
    ['stop of this VMI, still there', stopU1, running, false],
    ['stop of an older VMI', stopOther, running, true],
    ['start, VMI running', startReq, running, true],
    ['start, no VMI yet', startReq, undefined, false],
    ['start, VMI final', startReq, failed, false],
    ['start, VMI deleting', startReq, deleting, false],
  ] as const)('%s', (_n, reqs, vmi, expected) => {
    expect(firstRequestDone(reqs ? [...reqs] : undefined, vmi)).toBe(expected);
  });
});
