/**
 * The per-interface metrics carry upstream's `interface` label, the VMI's name for the NIC,
 * not libvirt's host device: the pod network's tap0 and a multus network's hashed tap map
 * back to the VMI interfaces; SR-IOV (no tap) and unknown devices keep the device name.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { domainSamples } from '../../../src/controllers/metrics/domain-stats';
import { interfaceAliases } from '../../../src/controllers/virt-handler/stats-targets';
import { tapName } from '../../../src/converter/configurators/interfaces';

const vmi: VirtualMachineInstance = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'v', namespace: 'ns' },
  spec: {
    domain: {
      devices: {
        interfaces: [
          { name: 'default', masquerade: {} },
          { name: 'blue', bridge: {} },
          { name: 'fast', sriov: {} },
        ],
      },
    },
    networks: [
      { name: 'default', pod: {} },
      { name: 'blue', multus: { networkName: 'ns/blue-net' } },
      { name: 'fast', multus: { networkName: 'ns/sriov' } },
    ],
  },
};

describe('interface aliases of the network metrics', () => {
  it('maps the taps to the VMI interface names', () => {
    expect(interfaceAliases(vmi)).toEqual({ tap0: 'default', [tapName('blue', false)]: 'blue' });
  });

  it('labels samples with the alias, else the device', () => {
    const blueTap = tapName('blue', false);
    const samples = domainSamples(
      {
        'net.count': 3,
        'net.0.name': 'tap0',
        'net.0.tx.bytes': 100,
        'net.1.name': blueTap,
        'net.1.tx.bytes': 200,
        'net.2.name': 'vnet7',
        'net.2.tx.bytes': 300,
      },
      interfaceAliases(vmi),
    ).filter((s) => s.name === 'kubevirt_vmi_network_transmit_bytes_total');
    expect(samples.map((s) => [s.labels.interface, s.value])).toEqual([
      ['default', 100],
      ['blue', 200],
      ['vnet7', 300],
    ]);
  });
});
