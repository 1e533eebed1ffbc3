import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../src/api';
import type { HostCapabilities, HypervisorDriver } from '../../src/drivers/driver';
import { FakeDriver, FakeHost } from '../../src/drivers/fake';
import type { HypervisorPlugin } from '../../src/drivers/plugin';
import {
  createDriverContainer,
  DRIVER_ANNOTATION,
  type DriverFactory,
  DriverRegistry,
  DriverTokens,
} from '../../src/drivers/registry';
import { minimalVmi } from '../../src/testing';

const caps = (over: Partial<HostCapabilities> = {}): HostCapabilities => ({
  driver: 'x',
  arch: 'x86_64',
  kvmUsable: false,
  emulationAvailable: true,
  cpuModels: [],
  cpuFeatures: [],
  maxVcpus: 8,
  memoryBytes: 1 << 30,
  hugepageSizesKiB: [],
  machineTypes: [],
  ...over,
});

const fakeFactory = (name: string, supports?: DriverFactory['supports']): DriverFactory => ({
  name,
  create: () => Object.assign(new FakeDriver({ host: new FakeHost() }), { name }) as FakeDriver,
  supports,
});

const vmi = (annotations?: Record<string, string>): VirtualMachineInstance => {
  const v = minimalVmi({ namespace: 'ns', name: 'vm' });
  if (annotations) v.metadata = { ...v.metadata, annotations };
  return v;
};

describe('DriverRegistry.select', () => {
  const kvmOnly = fakeFactory('kvm', (_v, c) => (c.kvmUsable ? true : 'KVM is not usable'));
  const emu = fakeFactory('emu', (_v, _c, cfg) => (cfg.useEmulation ? true : 'emulation is not allowed'));

  it('picks the first driver that supports the VMI on this host', () => {
    const r = new DriverRegistry([kvmOnly, emu], [], { useEmulation: true });
    expect(r.select(vmi(), caps({ kvmUsable: true })).name).toBe('kvm');
    expect(r.select(vmi(), caps()).name).toBe('emu');
  });

  it('explains why no driver fits, per driver', () => {
    const r = new DriverRegistry([kvmOnly, emu], [], {});
    expect(() => r.select(vmi(), caps())).toThrow(
      'VirtualMachineInstance ns/vm: no registered driver can run it (kvm: KVM is not usable; emu: emulation is not allowed)',
    );
  });

  it('honours the annotation, then the configuration, and never falls back from a named driver', () => {
    const r = new DriverRegistry([kvmOnly, emu], [], { driver: 'kvm', useEmulation: true });
    expect(r.select(vmi({ [DRIVER_ANNOTATION]: 'emu' }), caps()).name).toBe('emu');
    expect(() => r.select(vmi(), caps())).toThrow('driver kvm cannot run it: KVM is not usable');
    expect(() => r.select(vmi({ [DRIVER_ANNOTATION]: 'xen' }), caps())).toThrow(
      `metadata.annotations[${DRIVER_ANNOTATION}] names driver xen, which is not registered (known: kvm, emu)`,
    );
  });

  it('rejects duplicate registrations and unknown plugin names', () => {
    expect(() => new DriverRegistry([emu, emu])).toThrow('driver emu is already registered');
    const r = new DriverRegistry([], [{ name: 'a' }], { plugins: ['b'] });
    expect(() => r.plugins()).toThrow('plugins names b, which is not registered (known: a)');
  });
});

describe('plugin contributions', () => {
  const sevLike: HypervisorPlugin = {
    name: 'sevlike',
    appliesTo: (v) => v.metadata?.labels?.sev === 'yes',
    nodeLabels: (c): Record<string, string> => (c.sev?.sev ? { 'example.org/sev': 'true' } : {}),
    deviceResources: () => ({ 'devices.example.org/thing': 2 }),
    memoryOverhead: () => 1000,
    admissionRules: [
      (v) =>
        v.spec?.domain?.cpu?.cores === 1 ? [{ field: 'spec.domain.cpu.cores', message: 'too few' }] : [],
    ],
    launcherOperations: { ping: async () => ({ pong: true }) },
    mutateDomain: (d) => {
      d.type = 'qemu';
    },
  };
  const other: HypervisorPlugin = {
    name: 'other',
    deviceResources: () => ({ 'devices.example.org/thing': 1 }),
    nodeLabels: () => ({ 'example.org/sev': 'false' }),
  };

  it('merges resources, applies per-VMI hooks only where the plugin applies, and adds overhead to the driver', async () => {
    const r = new DriverRegistry([], [sevLike]);
    const plain = vmi();
    const sev = vmi();
    sev.metadata = { ...sev.metadata, labels: { sev: 'yes' } };
    expect(r.pluginsFor(plain)).toEqual([]);
    expect(r.pluginsFor(sev).map((p) => p.name)).toEqual(['sevlike']);
    expect(r.admit(plain)).toEqual([]);
    expect(r.admit(sev)).toEqual([{ field: 'spec.domain.cpu.cores', message: 'too few' }]);
    const d = new FakeDriver({ memoryOverheadBytes: 5 });
    expect(r.memoryOverhead(plain, d)).toBe(5);
    expect(r.memoryOverhead(sev, d)).toBe(1005);
    expect(
      r.nodeLabels(caps({ sev: { sev: true, sevEs: false, sevSnp: false, maxGuests: 1, maxEsGuests: 0 } })),
    ).toEqual({
      'example.org/sev': 'true',
    });
    expect(
      await r
        .launcherOperations()
        .get('ping')
        ?.operation({}, { driver: d, ref: { namespace: 'a', name: 'b' } }),
    ).toEqual({
      pong: true,
    });
  });

  it('adds device resources and refuses conflicting labels', () => {
    const r = new DriverRegistry([], [sevLike, other]);
    expect(r.deviceResources(caps())).toEqual({ 'devices.example.org/thing': 3 });
    expect(() =>
      r.nodeLabels(caps({ sev: { sev: true, sevEs: false, sevSnp: false, maxGuests: 1, maxEsGuests: 0 } })),
    ).toThrow('plugins sevlike and other both set node label example.org/sev (true vs false)');
  });
});

describe('createDriverContainer (inversify, no decorators)', () => {
  it('resolves the registry with all bound factories and plugins and builds the configured driver once', async () => {
    let built = 0;
    const counting: DriverFactory = {
      name: 'counting',
      create: (ctx) => {
        built++;
        expect(ctx.settings).toEqual({ speed: 3 });
        expect(ctx.plugins.map((p) => p.name)).toEqual(['p1']);
        return new FakeDriver();
      },
    };
    const c = createDriverContainer({
      factories: [fakeFactory('first'), counting],
      plugins: [{ name: 'p1' }],
      config: { driver: 'counting', settings: { counting: { speed: 3 } } },
    });
    const registry = c.get<DriverRegistry>(DriverTokens.registry);
    expect(registry.driverNames()).toEqual(['first', 'counting']);
    const d1 = await c.getAsync<HypervisorDriver>(DriverTokens.driver);
    const d2 = await c.getAsync<HypervisorDriver>(DriverTokens.driver);
    expect(d1).toBe(d2);
    expect(d1.name).toBe('fake');
    expect(built).toBe(1);
  });

  it('works with no plugins bound', () => {
    const c = createDriverContainer({ factories: [fakeFactory('only')] });
    expect(c.get<DriverRegistry>(DriverTokens.registry).plugins()).toEqual([]);
  });
});
