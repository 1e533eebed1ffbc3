import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { jsonPatch } from '../../../../src/controllers/runtime/patch';
import { vmiPatch } from '../../../../src/controllers/virt-controller/vmi/vmi-patch';

const running: VirtualMachineInstance = {
  metadata: { name: 'v', namespace: 'default', labels: { 'kubevirt.io/nodeName': 'n1' } },
  spec: { domain: { devices: {} } },
  status: {
    phase: 'Running',
    nodeName: 'n1',
    conditions: [{ type: 'Ready', status: 'False', reason: 'GuestNotRunning' }],
    activePods: { p1: 'n1' },
  },
};

describe('vmiPatch (the VMI controller on a VMI its node owns)', () => {
  it('tests and replaces only the fields that changed, and leaves the rest to whoever wrote them', () => {
    const next = structuredClone(running);
    next.status!.conditions = [{ type: 'Ready', status: 'True' }];
    next.status!.reason = 'x';
    const ops = vmiPatch(running, next);
    expect(ops).toEqual([
      { op: 'test', path: '/status/conditions', value: running.status!.conditions },
      { op: 'replace', path: '/status/conditions', value: [{ type: 'Ready', status: 'True' }] },
      { op: 'add', path: '/status/reason', value: 'x' },
    ]);
    // virt-handler set a field meanwhile: the patch keeps it.
    const current = structuredClone(running);
    current.status!.guestOSInfo = { name: 'linux' };
    const out = jsonPatch(current as never, ops) as VirtualMachineInstance;
    expect(out.status).toMatchObject({ guestOSInfo: { name: 'linux' }, reason: 'x' });
    expect(out.status!.conditions).toEqual([{ type: 'Ready', status: 'True' }]);
  });

  it('fails (422) when a field it changes was changed since it was read', () => {
    const next = structuredClone(running);
    next.status!.phase = 'Failed';
    const current = structuredClone(running);
    current.status!.phase = 'Succeeded';
    expect(() => jsonPatch(current as never, vmiPatch(running, next))).toThrow(/test operation failed/);
  });

  it('is empty when nothing changed; removes dropped fields after testing them', () => {
    expect(vmiPatch(running, structuredClone(running))).toEqual([]);
    const next = structuredClone(running);
    delete next.status!.activePods;
    expect(vmiPatch(running, next)).toEqual([
      { op: 'test', path: '/status/activePods', value: { p1: 'n1' } },
      { op: 'remove', path: '/status/activePods' },
    ]);
  });
});
