import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { nodeDeviceResources, nodeLabelsFor } from '../../../src/controllers/virt-handler/node-labels';
import { finalPhaseOf, nextHandlerStatus } from '../../../src/controllers/virt-handler/vmi-status';
import type { HostCapabilities } from '../../../src/drivers/driver';
import { runningDomain } from './running-domain';

const now = '2026-01-01T00:00:00Z';
const vmi = (phase: string): VirtualMachineInstance => ({
  metadata: { name: 'v', namespace: 'ns', uid: 'u' },
  spec: { domain: { devices: {} } },
  status: { phase, nodeName: 'n1', phaseTransitionTimestamps: [{ phase, phaseTransitionTimestamp: now }] },
});
const dom = runningDomain;

describe('nextHandlerStatus', () => {
  it('Scheduled + running domain -> Running, stamped once, Ready left to the VMI controller; unchanged on a second pass', () => {
    const a = nextHandlerStatus(vmi('Scheduled'), { kind: 'domain', domain: dom({}) }, 'T1');
    expect(a.status?.phase).toBe('Running');
    expect(a.status?.conditions?.find((c) => c.type === 'Ready')).toBeUndefined();
    expect(a.status?.phaseTransitionTimestamps?.map((t) => t.phase)).toEqual(['Scheduled', 'Running']);
    const b = nextHandlerStatus(a, { kind: 'domain', domain: dom({}) }, 'T2');
    expect(b.status).toEqual(a.status);
  });

  it('fsFreezeStatus is frozen while the launcher reports a freeze, unset after the thaw and when the guest ends', () => {
    const frozen = nextHandlerStatus(
      vmi('Running'),
      { kind: 'domain', domain: dom({ fsFreezeStatus: 'frozen' }) },
      'T1',
    );
    expect(frozen.status?.fsFreezeStatus).toBe('frozen');
    const thawed = nextHandlerStatus(frozen, { kind: 'domain', domain: dom({}) }, 'T2');
    expect(thawed.status).not.toHaveProperty('fsFreezeStatus');
    const ended = nextHandlerStatus(
      frozen,
      { kind: 'domain', domain: dom({ state: 'shutoff', finished: true }) },
      'T3',
    );
    expect(ended.status?.phase).toBe('Succeeded');
    expect(ended.status).not.toHaveProperty('fsFreezeStatus');
  });

  it("AccessCredentialsSynchronized follows the launcher's credential sync, restamped only on a change (upstream updateAccessCredentialConditions)", () => {
    const cond = (v: VirtualMachineInstance) =>
      v.status?.conditions?.find((c) => c.type === 'AccessCredentialsSynchronized');
    const none = nextHandlerStatus(vmi('Running'), { kind: 'domain', domain: dom({}) }, 'T0');
    expect(cond(none)).toBeUndefined();
    const offline = nextHandlerStatus(
      none,
      {
        kind: 'domain',
        domain: dom({ accessCredential: { succeeded: false, message: 'Guest agent is offline' } }),
      },
      'T1',
    );
    expect(cond(offline)).toEqual({
      type: 'AccessCredentialsSynchronized',
      status: 'False',
      message: 'Guest agent is offline',
      lastProbeTime: null,
      lastTransitionTime: 'T1',
    });
    const ok = {
      kind: 'domain' as const,
      domain: dom({ accessCredential: { succeeded: true, message: '' } }),
    };
    const synced = nextHandlerStatus(offline, ok, 'T2');
    expect(cond(synced)).toEqual({
      type: 'AccessCredentialsSynchronized',
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: 'T2',
    });
    expect(cond(nextHandlerStatus(synced, ok, 'T3'))?.lastTransitionTime).toBe('T2');
  });

  it('a bridge binding on the pod network makes the VMI not live-migratable unless annotated (then True)', () => {
    const bridged = (annotations?: Record<string, string>): VirtualMachineInstance => ({
      ...vmi('Scheduled'),
      metadata: { name: 'v', namespace: 'ns', uid: 'u', annotations },
      spec: {
        domain: { devices: { interfaces: [{ name: 'default', bridge: {} }] } },
        networks: [{ name: 'default', pod: {} }],
      },
    });
    const a = nextHandlerStatus(bridged(), { kind: 'domain', domain: dom({}) }, 'T1');
    expect(a.status?.conditions).toContainEqual(
      expect.objectContaining({
        type: 'LiveMigratable',
        status: 'False',
        reason: 'InterfaceNotLiveMigratable',
      }),
    );
    const allowed = bridged({ 'kubevirt.io/allow-pod-bridge-network-live-migration': '' });
    const b = nextHandlerStatus(allowed, { kind: 'domain', domain: dom({}) }, 'T1');
    expect(b.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'LiveMigratable', status: 'True' }),
    );
    // Not migratable -> migratable replaces the condition (upstream writes it every sync).
    const c = nextHandlerStatus(
      { ...a, metadata: allowed.metadata },
      { kind: 'domain', domain: dom({}) },
      'T2',
    );
    expect(c.status?.conditions?.filter((x) => x.type === 'LiveMigratable')).toEqual([
      expect.objectContaining({ status: 'True', lastTransitionTime: 'T2' }),
    ]);
  });

  it('a paused domain adds the Paused condition; resuming removes it', () => {
    const p = nextHandlerStatus(vmi('Running'), { kind: 'domain', domain: dom({ state: 'paused' }) }, 'T1');
    expect(p.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Paused', status: 'True', reason: 'PausedByUser' }),
    );
    const r = nextHandlerStatus(p, { kind: 'domain', domain: dom({}) }, 'T2');
    expect(r.status?.conditions?.some((c) => c.type === 'Paused')).toBe(false);
  });

  it('a finished domain is Succeeded, a crashed one Failed; a dead launcher fails with the reason', () => {
    const off = dom({ state: 'shutoff', reason: 'shutdown', finished: true });
    expect(nextHandlerStatus(vmi('Running'), { kind: 'domain', domain: off }, now).status?.phase).toBe(
      'Succeeded',
    );
    expect(finalPhaseOf(dom({ state: 'crashed', finished: true }))).toBe('Failed');
    const gone = nextHandlerStatus(
      vmi('Running'),
      { kind: 'gone', lastDomain: dom({}), why: 'virt-launcher is gone: x' },
      now,
    );
    expect(gone.status).toMatchObject({ phase: 'Failed', reason: 'virt-launcher is gone: x' });
    const goneAfterOff = nextHandlerStatus(vmi('Running'), { kind: 'gone', lastDomain: off, why: 'x' }, now);
    expect(goneAfterOff.status?.phase).toBe('Succeeded');
  });
});

describe('node labels and device resources', () => {
  const caps: HostCapabilities = {
    driver: 'emulation',
    arch: 'x86_64',
    kvmUsable: false,
    emulationAvailable: true,
    cpuModels: ['Skylake-Client', 'bad model'],
    cpuFeatures: ['avx2'],
    maxVcpus: 8,
    memoryBytes: 1,
    hugepageSizesKiB: [],
    machineTypes: ['q35', 'pc-q35-7.2'],
    sev: { sev: true, sevEs: false, sevSnp: false, maxGuests: 15, maxEsGuests: 0 },
  };

  it('label schedulable, CPU models/features, machine types and SEV; skip invalid names', () => {
    const l = nodeLabelsFor(caps, { 'example.com/x': 'y' });
    expect(l).toMatchObject({
      'kubevirt.io/schedulable': 'true',
      'cpu-model.node.kubevirt.io/Skylake-Client': 'true',
      'cpu-feature.node.kubevirt.io/avx2': 'true',
      'machine-type.node.kubevirt.io/q35': 'true',
      'machine-type.node.kubevirt.io/pc-q35-7.2': 'true',
      'kubevirt.io/sev': 'true',
      'example.com/x': 'y',
    });
    expect(Object.keys(l).some((k) => k.includes(' '))).toBe(false);
    expect(l['kubevirt.io/sev-es']).toBeUndefined();
  });

  it('offer no kvm without KVM, shared tun/vhost-net, SEV by ASIDs', () => {
    expect(nodeDeviceResources(caps)).toEqual({
      'devices.kubevirt.io/kvm': '0',
      'devices.kubevirt.io/tun': '1000',
      'devices.kubevirt.io/vhost-net': '1000',
      'devices.kubevirt.io/sev': '15',
    });
    expect(nodeDeviceResources({ ...caps, kvmUsable: true })['devices.kubevirt.io/kvm']).toBe('1000');
  });
});
