import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import type { LauncherGuestAgent } from '../../../src/controllers/launcher-protocol/guest-agent-report';
import { interfacesOf } from '../../../src/controllers/virt-handler/guest-agent-status';
import { nextHandlerStatus } from '../../../src/controllers/virt-handler/vmi-status';
import { runningDomain } from './running-domain';

const vmi = (
  interfaces: NonNullable<VirtualMachineInstance['spec']['domain']['devices']>['interfaces'] = [],
) =>
  ({
    metadata: { name: 'v', namespace: 'ns', uid: 'u' },
    spec: { domain: { devices: { interfaces } } },
    status: { phase: 'Scheduled', nodeName: 'n1' },
  }) as VirtualMachineInstance;
const dom = (guestAgent?: LauncherGuestAgent) => runningDomain({ guestAgent });
const os = {
  id: 'kubevirt-ts-guest',
  name: 'kubevirt-ts tiny guest',
  prettyName: 'kubevirt-ts tiny guest 6',
  version: '6',
  versionId: '6',
  kernelRelease: '6.1.0-57-amd64',
  kernelVersion: '#1 SMP',
  machine: 'x86_64',
};
const lo = {
  name: 'lo',
  mac: '00:00:00:00:00:00',
  ipAddresses: [
    { address: '127.0.0.1', type: 'ipv4' as const, prefix: 8 },
    { address: '::1', type: 'ipv6' as const, prefix: 128 },
  ],
};
const eth0 = {
  name: 'eth0',
  mac: '52:54:00:aa:bb:cc',
  ipAddresses: [
    { address: 'fd00::5', type: 'ipv6' as const, prefix: 64 },
    { address: '10.0.2.15', type: 'ipv4' as const, prefix: 24 },
  ],
};
const cond = (v: VirtualMachineInstance, type: string) => v.status?.conditions?.find((c) => c.type === type);

describe('guest agent status', () => {
  it('AgentConnected True with guestOSInfo while connected; written once; removed on disconnect, guestOSInfo kept', () => {
    const agent: LauncherGuestAgent = { connected: true, os, hostname: 'h', interfaces: [lo] };
    // The VMI controller's Ready (from the pod), which the handler leaves as it is.
    const ready = { type: 'Ready', status: 'True', lastTransitionTime: 'T0' };
    const start = vmi();
    start.status = { ...start.status, conditions: [ready] };
    const a = nextHandlerStatus(start, { kind: 'domain', domain: dom(agent) }, 'T1');
    expect(cond(a, 'AgentConnected')).toMatchObject({ status: 'True', lastTransitionTime: 'T1' });
    expect(a.status?.guestOSInfo).toEqual(os);
    // lo is left out, as upstream does: no pod network here, so no interface at all.
    expect(a.status?.interfaces).toEqual([]);

    // Same report later: nothing changes, so the handler writes nothing.
    const again = nextHandlerStatus(a, { kind: 'domain', domain: dom(agent) }, 'T2');
    expect(again.status).toEqual(a.status);

    const off = nextHandlerStatus(a, { kind: 'domain', domain: dom({ connected: false }) }, 'T3');
    expect(cond(off, 'AgentConnected')).toBeUndefined();
    expect(off.status?.guestOSInfo).toEqual(os);
    expect(cond(off, 'Ready')).toEqual(ready);
  });

  it('a driver without an agent: no condition, empty guestOSInfo and interfaces (as before)', () => {
    const a = nextHandlerStatus(vmi(), { kind: 'domain', domain: dom(undefined) }, 'T1');
    expect(cond(a, 'AgentConnected')).toBeUndefined();
    expect(a.status?.guestOSInfo).toEqual({});
    expect(a.status?.interfaces).toEqual([]);
  });

  it('a finished guest loses AgentConnected', () => {
    const a = nextHandlerStatus(vmi(), { kind: 'domain', domain: dom({ connected: true, os }) }, 'T1');
    const done = nextHandlerStatus(
      a,
      { kind: 'domain', domain: { ...dom({ connected: true, os }), state: 'shutoff', finished: true } },
      'T2',
    );
    expect(done.status?.phase).toBe('Succeeded');
    expect(cond(done, 'AgentConnected')).toBeUndefined();
  });

  it('merges agent interfaces into spec interfaces by MAC; unmatched ones come from the guest agent', () => {
    const spec = vmi([
      { name: 'default', masquerade: {}, macAddress: '52-54-00-AA-BB-CC' },
      { name: 'second', bridge: {} },
      { name: 'gone', bridge: {}, state: 'absent' },
    ]).spec;
    const extra = { name: 'eth9', ipAddresses: [] };
    expect(interfacesOf(spec, { connected: true, interfaces: [lo, eth0, extra] })).toEqual([
      {
        name: 'default',
        mac: '52:54:00:aa:bb:cc',
        interfaceName: 'eth0',
        ipAddress: '10.0.2.15',
        ipAddresses: ['fd00::5', '10.0.2.15'],
        infoSource: 'domain, guest-agent',
      },
      { name: 'second', infoSource: 'domain' },
      { interfaceName: 'eth9', infoSource: 'guest-agent' },
    ]);
    // A disconnected agent contributes nothing.
    expect(interfacesOf(spec, { connected: false, interfaces: [eth0] })).toEqual([
      { name: 'default', mac: '52:54:00:aa:bb:cc', infoSource: 'domain' },
      { name: 'second', infoSource: 'domain' },
    ]);
  });
});
