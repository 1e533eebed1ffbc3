import { describe, expect, it } from 'vitest';
import {
  lifecycleToEvent,
  parseDomainCapabilities,
  parseHostCapabilities,
  reasonName,
  stateName,
  toHostCapabilities,
} from '../../../src/drivers/libvirt-driver';
import { passtBackendFor } from '../../../src/drivers/passt-backend';

const HOST_XML = `<capabilities>
  <host>
    <uuid>2f5a4e4e-3b0b-4a5e-9a3e-0d3e2f1c9b10</uuid>
    <cpu>
      <arch>x86_64</arch>
      <model>EPYC-Milan</model>
      <feature name='x2apic'/>
      <feature name='avx2'/>
      <pages unit='KiB' size='4'/>
      <pages unit='KiB' size='2048'/>
      <pages unit='KiB' size='1048576'/>
    </cpu>
  </host>
  <guest>
    <os_type>hvm</os_type>
    <arch name='i686'>
      <machine>pc-i440fx-7.2</machine>
      <domain type='qemu'/>
    </arch>
  </guest>
  <guest>
    <os_type>hvm</os_type>
    <arch name='x86_64'>
      <machine maxCpus='255'>pc-i440fx-7.2</machine>
      <machine canonical='pc-q35-7.2' maxCpus='288'>q35</machine>
      <domain type='qemu'/>
      <domain type='kvm'/>
    </arch>
  </guest>
</capabilities>`;

const DOMCAPS_XML = `<domainCapabilities>
  <domain>qemu</domain>
  <machine>pc-i440fx-7.2</machine>
  <arch>x86_64</arch>
  <vcpu max='255'/>
  <cpu>
    <mode name='host-passthrough' supported='no'/>
    <mode name='custom' supported='yes'>
      <model usable='yes' vendor='Intel'>qemu64</model>
      <model usable='no' vendor='AMD'>EPYC-Milan</model>
      <model usable='yes' vendor='Intel'>Nehalem</model>
    </mode>
  </cpu>
</domainCapabilities>`;

describe('host probe parsing', () => {
  it('reads arch, domain types, features, hugepages (not 4 KiB) and machines of the host arch', () => {
    expect(parseHostCapabilities(HOST_XML)).toEqual({
      arch: 'x86_64',
      domainTypes: ['qemu', 'kvm'],
      cpuFeatures: ['x2apic', 'avx2'],
      hugepageSizesKiB: [2048, 1048576],
      machineTypes: ['pc-i440fx-7.2', 'q35'],
    });
  });

  it('reads usable custom CPU models and the vCPU limit', () => {
    expect(parseDomainCapabilities(DOMCAPS_XML)).toEqual({
      maxVcpus: 255,
      cpuModels: ['qemu64', 'Nehalem'],
      machine: 'pc-i440fx-7.2',
    });
  });

  it('reads the interface backends libvirt reports, and picks who starts passt from them', () => {
    const withBackends = (values: string) =>
      DOMCAPS_XML.replace(
        '</domainCapabilities>',
        `<devices><interface supported='yes'><enum name='backendType'>${values}</enum></interface></devices></domainCapabilities>`,
      );
    const both = parseDomainCapabilities(withBackends('<value>default</value><value>passt</value>'));
    expect(both.interfaceBackends).toEqual(['default', 'passt']);
    const slirpOnly = parseDomainCapabilities(withBackends('<value>default</value>'));
    expect(slirpOnly.interfaceBackends).toEqual(['default']);
    // Debian 12's libvirt 9.0.0: no <interface> in <devices> at all.
    const none = parseDomainCapabilities(
      DOMCAPS_XML.replace(
        '</domainCapabilities>',
        '<devices><disk supported="yes"/></devices></domainCapabilities>',
      ),
    );
    expect(none.interfaceBackends).toBeUndefined();
    const host = parseHostCapabilities(HOST_XML);
    const caps = (domcaps: ReturnType<typeof parseDomainCapabilities>) =>
      toHostCapabilities({
        driverName: 'libvirt',
        host,
        domcaps,
        nodeMemoryKiB: 1,
        nodeCpus: 1,
        allowKvm: true,
        testDriver: false,
      });
    expect(caps(both).interfaceBackends).toEqual(['default', 'passt']);
    expect(passtBackendFor(caps(both))).toBe('libvirt');
    expect(passtBackendFor(caps(slirpOnly))).toBe('qemu');
    expect(passtBackendFor(caps(none))).toBe('qemu');
  });

  it('reports KVM only when allowed, and emulation for the test driver', () => {
    const host = parseHostCapabilities(HOST_XML);
    const base = { driverName: 'libvirt', host, nodeMemoryKiB: 1024, nodeCpus: 2, testDriver: false };
    expect(toHostCapabilities({ ...base, allowKvm: true })).toMatchObject({
      kvmUsable: true,
      emulationAvailable: true,
      memoryBytes: 1024 * 1024,
      maxVcpus: 2,
    });
    expect(toHostCapabilities({ ...base, allowKvm: false }).kvmUsable).toBe(false);
    const testHost = { ...host, domainTypes: ['test'] };
    expect(toHostCapabilities({ ...base, host: testHost, allowKvm: true, testDriver: true })).toMatchObject({
      kvmUsable: false,
      emulationAvailable: true,
    });
  });

  it('rejects other documents', () => {
    expect(() => parseHostCapabilities('<domainCapabilities/>')).toThrow('no <capabilities> root element');
  });
});

describe('libvirt states and events', () => {
  it('names states and reasons as libvirt does', () => {
    expect(stateName(1)).toBe('running');
    expect(stateName(5)).toBe('shutoff');
    expect(reasonName('shutoff', 2)).toBe('destroyed');
    expect(reasonName('paused', 1)).toBe('user');
    expect(reasonName('running', 99)).toBe('reason-99');
  });

  it('maps lifecycle events and details', () => {
    expect(lifecycleToEvent('ns_vm', 2, 0)).toEqual({ type: 'started', domain: 'ns_vm', reason: 'booted' });
    expect(lifecycleToEvent('ns_vm', 5, 0)).toEqual({ type: 'stopped', domain: 'ns_vm', reason: 'shutdown' });
    expect(lifecycleToEvent('ns_vm', 5, 1)).toEqual({
      type: 'stopped',
      domain: 'ns_vm',
      reason: 'destroyed',
    });
    expect(lifecycleToEvent('ns_vm', 3, 0)).toEqual({ type: 'paused', domain: 'ns_vm', reason: 'paused' });
    expect(lifecycleToEvent('ns_vm', 0, 1)).toEqual({ type: 'defined', domain: 'ns_vm', updated: true });
    expect(lifecycleToEvent('ns_vm', 42, 0)).toBeUndefined();
  });
});
