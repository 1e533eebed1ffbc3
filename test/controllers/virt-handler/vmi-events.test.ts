/** virt-handler's VMI events: upstream's reasons per phase change, and the launcher events it accepts. */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { launcherEvent, phaseEvents } from '../../../src/controllers/virt-handler/vmi-events';

const vmi = (phase?: string, reason?: string) =>
  ({
    metadata: { namespace: 'ns1', name: 'vm1', uid: 'u1' },
    spec: { domain: { devices: {} } },
    status: { phase, reason },
  }) as unknown as VirtualMachineInstance;

describe('phaseEvents', () => {
  it.each([
    [
      'Scheduled',
      'Running',
      ['Normal Created VirtualMachineInstance defined.', 'Normal Started VirtualMachineInstance started.'],
    ],
    ['Running', 'Succeeded', ['Normal Stopped The VirtualMachineInstance was shut down.']],
    ['Running', 'Running', []],
    ['Scheduling', 'Scheduled', []],
  ])('%s -> %s', (from, to, want) => {
    expect(phaseEvents(vmi(from), vmi(to)).map((e) => `${e.type} ${e.reason} ${e.message}`)).toEqual(want);
  });

  it('a failed VMI gets a Warning naming why', () => {
    expect(phaseEvents(vmi('Running'), vmi('Failed', 'virt-launcher is gone: EOF'))).toEqual([
      { type: 'Warning', reason: 'Stopped', message: 'virt-launcher is gone: EOF' },
    ]);
  });
});

describe('launcherEvent', () => {
  const lookup = (ns: string, name: string) => (ns === 'ns1' && name === 'vm1' ? vmi('Running') : undefined);
  const ev = (over: Record<string, unknown> = {}) => ({
    type: 'Warning',
    reason: 'IOerror',
    message: 'VM Paused due to IO error',
    involvedObject: { kind: 'VirtualMachineInstance', namespace: 'ns1', name: 'vm1', uid: 'u1' },
    ...over,
  });

  it('accepts an event about its own VMI', () => {
    const r = launcherEvent(ev(), lookup);
    expect('event' in r && r.event).toEqual({
      type: 'Warning',
      reason: 'IOerror',
      message: 'VM Paused due to IO error',
    });
  });

  it.each([
    [{ type: 'Error' }, 'type must be Normal or Warning'],
    [{ reason: 'bad reason\n' }, 'reason "bad reason\\n" is not a CamelCase word'],
    [{ message: 3 }, 'message must be a string'],
    [
      { involvedObject: { kind: 'VirtualMachineInstance', namespace: 'ns1', name: 'vm1', uid: 'other' } },
      'VirtualMachineInstance ns1/vm1 (uid other) is not on this node',
    ],
    [
      { involvedObject: { kind: 'Pod', namespace: 'ns1', name: 'vm1', uid: 'u1' } },
      'involvedObject must be a VirtualMachineInstance',
    ],
  ])('refuses %j', (over, error) => {
    expect(launcherEvent(ev(over), lookup)).toEqual({ error });
  });
});
