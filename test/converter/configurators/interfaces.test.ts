import { describe, expect, it } from 'vitest';
import { interfacesConfigurator } from '../../../src/converter/configurators';
import { tapName } from '../../../src/converter/configurators/interfaces';
import { run, vmi } from '../support/run';

const pod = { name: 'default', pod: {} };

describe('interfaces configurator', () => {
  it('turns a masquerade interface into a virtio-non-transitional ethernet tap without ROM', () => {
    const d = run(
      [interfacesConfigurator],
      vmi({ networks: [pod], domain: { devices: { interfaces: [{ name: 'default', masquerade: {} }] } } }),
    );
    expect(d.devices.interface).toEqual([
      {
        type: 'ethernet',
        target: { dev: 'tap0', managed: 'no' },
        model: { type: 'virtio-non-transitional' },
        rom: { enabled: 'no' },
        alias: { name: 'ua-default' },
      },
    ]);
  });

  it('names secondary taps from a hash of the network name, like upstream', () => {
    expect(tapName('ptp', false)).toMatch(/^tap[0-9a-f]{11}$/);
    expect(tapName('ptp', false)).not.toBe(tapName('other', false));
    expect(tapName('ptp', true)).toBe('tap0');
  });

  it('leaves out interfaces marked absent (being unplugged)', () => {
    const d = run(
      [interfacesConfigurator],
      vmi({
        networks: [pod],
        domain: { devices: { interfaces: [{ name: 'default', masquerade: {}, state: 'absent' }] } },
      }),
    );
    expect(d.devices.interface).toBeUndefined();
  });

  it('keeps the ROM when the NIC boots, except under SEV', () => {
    const spec = {
      networks: [pod],
      domain: { devices: { interfaces: [{ name: 'default', bridge: {}, bootOrder: 1 }] } },
    };
    expect(run([interfacesConfigurator], vmi(spec)).devices.interface![0].rom).toBeUndefined();
    const sev = run(
      [interfacesConfigurator],
      vmi({ ...spec, domain: { ...spec.domain, launchSecurity: { sev: {} } } }),
    );
    expect(sev.devices.interface![0].rom).toEqual({ enabled: 'no' });
    expect(sev.devices.interface![0].driver).toEqual({ iommu: 'on' });
  });

  it('gives virtio NICs one queue per vCPU with networkInterfaceMultiqueue', () => {
    const d = run(
      [interfacesConfigurator],
      vmi({
        networks: [pod],
        domain: {
          cpu: { cores: 4 },
          devices: { networkInterfaceMultiqueue: true, interfaces: [{ name: 'default', masquerade: {} }] },
        },
      }),
    );
    expect(d.devices.interface![0].driver).toEqual({ name: 'vhost', queues: 4 });
  });

  it("renders passtBinding as libvirt's passt backend on eth0, as upstream's passt plugin", () => {
    const passt = (ports?: { port: number; protocol?: string }[], networks: object[] = [pod]) =>
      run(
        [interfacesConfigurator],
        vmi({
          networks,
          domain: {
            devices: {
              interfaces: [{ name: 'default', passtBinding: {}, macAddress: '02:00:00:aa:bb:cc', ports }],
            },
          },
        } as never),
      ).devices.interface;
    expect(passt()).toEqual([
      {
        type: 'user',
        source: { dev: 'eth0' },
        model: { type: 'virtio-non-transitional' },
        backend: { type: 'passt' },
        portForward: [
          { proto: 'tcp', dev: 'eth0' },
          { proto: 'udp', dev: 'eth0' },
        ],
        alias: { name: 'ua-default' },
        mac: { address: '02:00:00:aa:bb:cc' },
        rom: { enabled: 'no' },
      },
    ]);
    expect(passt([{ port: 8080 }, { port: 53, protocol: 'UDP' }, { port: 22 }])?.[0].portForward).toEqual([
      { proto: 'tcp', dev: 'eth0', range: [{ start: 8080 }, { start: 22 }] },
      { proto: 'udp', dev: 'eth0', range: [{ start: 53 }] },
    ]);
    expect(() => passt([{ port: 1, protocol: 'SCTP' }])).toThrow(
      'spec.domain.devices.interfaces[0].ports[0].protocol: passt forwards TCP and UDP only',
    );
    expect(() => passt(undefined, [{ name: 'default', multus: { networkName: 'n' } }])).toThrow(
      'spec.domain.devices.interfaces[0].passtBinding: the passt binding is only supported on the pod network',
    );
  });

  it('makes an SR-IOV interface a PCI hostdev from the resolved device', () => {
    const d = run(
      [interfacesConfigurator],
      vmi({
        networks: [{ name: 'sriov-net', multus: { networkName: 'x' } }],
        domain: { devices: { interfaces: [{ name: 'sriov-net', sriov: {} }] } },
      }),
    );
    expect(d.devices.interface).toBeUndefined();
    expect(d.devices.hostdev).toEqual([
      {
        mode: 'subsystem',
        type: 'pci',
        managed: 'no',
        source: { address: { domain: '0x0000', bus: '0x3b', slot: '0x02', function: '0x1' } },
        alias: { name: 'ua-sriov-sriov-net' },
      },
    ]);
  });

  it('fails with field paths on a missing network, a bad MAC and an unresolved SR-IOV device', () => {
    const iface = (extra: object) =>
      vmi({
        networks: [pod],
        domain: { devices: { interfaces: [{ name: 'default', masquerade: {}, ...extra }] } },
      });
    expect(() =>
      run(
        [interfacesConfigurator],
        vmi({ domain: { devices: { interfaces: [{ name: 'x', bridge: {} }] } } }),
      ),
    ).toThrow("spec.domain.devices.interfaces[0].name: no network named 'x' in spec.networks");
    expect(() => run([interfacesConfigurator], iface({ macAddress: '02:00:00:00:00:0"' }))).toThrow(
      /interfaces\[0\]\.macAddress: '02:00:00:00:00:0"' is not a MAC address/,
    );
    expect(() =>
      run(
        [interfacesConfigurator],
        vmi({
          networks: [{ name: 'n', multus: { networkName: 'n' } }],
          domain: { devices: { interfaces: [{ name: 'n', sriov: {} }] } },
        }),
      ),
    ).toThrow(/interfaces\[0\]: SR-IOV interface 'n' has no PCI device resolved/);
  });
});
