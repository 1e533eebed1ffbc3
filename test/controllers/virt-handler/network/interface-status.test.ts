/**
 * status.interfaces from the launcher's network report: the generated MAC, the pod IP for
 * masquerade (kept when the guest agent reports the guest's own 10.0.2.2), the DHCP lease
 * for other bindings without an agent.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstanceSpec } from '../../../../src/api/generated/types';
import { interfacesOf } from '../../../../src/controllers/virt-handler/guest-agent-status';

const spec = (binding: 'masquerade' | 'bridge') =>
  ({
    domain: { devices: { interfaces: [{ name: 'default', [binding]: {} }] } },
    networks: [{ name: 'default', pod: {} }],
  }) as VirtualMachineInstanceSpec;
const report = (binding: 'masquerade' | 'bridge', leasedIP?: string) => [
  {
    name: 'default',
    binding,
    mac: '02:aa:bb:cc:dd:ee',
    podIP: '10.244.77.5',
    ...(leasedIP ? { leasedIP } : {}),
  },
];

describe('interface status from the network setup', () => {
  it('masquerade: the generated MAC and the pod IP, infoSource domain', () => {
    expect(interfacesOf(spec('masquerade'), undefined, report('masquerade', '10.0.2.2'))).toEqual([
      {
        name: 'default',
        infoSource: 'domain',
        mac: '02:aa:bb:cc:dd:ee',
        ipAddress: '10.244.77.5',
        ipAddresses: ['10.244.77.5'],
      },
    ]);
  });

  it('masquerade with a guest agent: interfaceName from the agent, the pod IP kept', () => {
    const agent = {
      connected: true,
      interfaces: [
        {
          name: 'eth0',
          mac: '02:AA:BB:CC:DD:EE',
          ipAddresses: [{ address: '10.0.2.2', type: 'ipv4' as const, prefix: 24 }],
        },
      ],
    };
    expect(interfacesOf(spec('masquerade'), agent as never, report('masquerade', '10.0.2.2'))).toEqual([
      {
        name: 'default',
        infoSource: 'domain, guest-agent',
        mac: '02:aa:bb:cc:dd:ee',
        interfaceName: 'eth0',
        ipAddress: '10.244.77.5',
        ipAddresses: ['10.244.77.5'],
      },
    ]);
  });

  it('another binding without an agent: the DHCP lease, once acknowledged', () => {
    expect(interfacesOf(spec('bridge'), undefined, report('bridge'))[0]).not.toHaveProperty('ipAddress');
    expect(interfacesOf(spec('bridge'), undefined, report('bridge', '10.244.77.5'))[0]).toMatchObject({
      ipAddress: '10.244.77.5',
      mac: '02:aa:bb:cc:dd:ee',
    });
  });

  it('a secondary network on the bridge binding: its lease and its pod interface name', () => {
    const twoNets = {
      domain: {
        devices: {
          interfaces: [
            { name: 'default', masquerade: {} },
            { name: 'blue', bridge: {} },
          ],
        },
      },
      networks: [
        { name: 'default', pod: {} },
        { name: 'blue', multus: { networkName: 'blue-net' } },
      ],
    } as VirtualMachineInstanceSpec;
    const net = [
      { ...report('masquerade')[0], podInterface: 'eth0' },
      {
        name: 'blue',
        binding: 'bridge' as const,
        mac: '02:4b:56:00:00:07',
        podIP: '10.250.91.10',
        leasedIP: '10.250.91.10',
        podInterface: 'pod16477688c0e',
      },
    ];
    expect(interfacesOf(twoNets, undefined, net)).toEqual([
      {
        name: 'default',
        infoSource: 'domain',
        mac: '02:aa:bb:cc:dd:ee',
        podInterfaceName: 'eth0',
        ipAddress: '10.244.77.5',
        ipAddresses: ['10.244.77.5'],
      },
      {
        name: 'blue',
        infoSource: 'domain',
        mac: '02:4b:56:00:00:07',
        podInterfaceName: 'pod16477688c0e',
        ipAddress: '10.250.91.10',
        ipAddresses: ['10.250.91.10'],
      },
    ]);
    // NIC hotplug: with the launcher's list of the secondary NICs the domain has, one it
    // lacks (plugged on a later pod) is not listed; an absent one it still has is.
    const names = (v: VirtualMachineInstanceSpec, have: string[]) =>
      interfacesOf(v, undefined, net, have).map((i) => i.name);
    expect(names(twoNets, [])).toEqual(['default']);
    expect(names(twoNets, ['blue'])).toEqual(['default', 'blue']);
    const ifaces = twoNets.domain.devices.interfaces ?? [];
    const absent = {
      ...twoNets,
      domain: { devices: { interfaces: [ifaces[0], { ...ifaces[1], state: 'absent' }] } },
    } as VirtualMachineInstanceSpec;
    expect(names(absent, ['blue'])).toEqual(['default', 'blue']);
    expect(names(absent, [])).toEqual(['default']);
    // Without the list (a launcher that does not say): every interface that is not absent.
    expect(interfacesOf(absent, undefined, net).map((i) => i.name)).toEqual(['default']);
  });

  it('masquerade on a dual-stack pod: both pod addresses, IPv4 first', () => {
    const net = [{ ...report('masquerade')[0], podIPv6: 'fd00:244:94::2' }];
    expect(interfacesOf(spec('masquerade'), undefined, net)[0]).toMatchObject({
      ipAddress: '10.244.77.5',
      ipAddresses: ['10.244.77.5', 'fd00:244:94::2'],
    });
  });
});
