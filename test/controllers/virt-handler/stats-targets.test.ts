/**
 * The per-interface metrics carry upstream's `interface` label, the VMI's name for the NIC,
 * not libvirt's host device: the pod network's tap0 and a multus network's hashed tap map
 * back to the VMI interfaces; SR-IOV (no tap) and unknown devices keep the device name.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import type { Pod } from '../../../src/controllers/common/pod';
import { domainSamples } from '../../../src/controllers/metrics/domain-stats';
import { parseExposition } from '../../../src/controllers/metrics/exposition';
import { HandlerMetrics } from '../../../src/controllers/metrics/handler-metrics';
import { scrape } from '../../../src/controllers/metrics/server';
import type { LauncherConnections } from '../../../src/controllers/virt-handler/launcher-connections';
import { interfaceAliases, statsTargets } from '../../../src/controllers/virt-handler/stats-targets';
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

/** A Running VMI on n1 with 2 vCPUs (1 socket, 2 cores), one disk and one interface. */
const running = (name: string): VirtualMachineInstance => ({
  ...vmi,
  metadata: { name, namespace: 'ns', uid: `uid-${name}` },
  spec: {
    domain: {
      cpu: { cores: 2 },
      devices: { disks: [{ name: 'root', disk: {} }], interfaces: [{ name: 'default', masquerade: {} }] },
    },
    networks: [{ name: 'default', pod: {} }],
  },
  status: { phase: 'Running', nodeName: 'n1' },
});

/**
 * Launchers that report whatever `params` says, counting GetDomainStats calls and every
 * key the metrics read from their records.
 */
function fakeLaunchers(params: () => Record<string, number | string>) {
  const counts = { calls: 0, reads: 0 };
  const conns = {
    socketExists: () => true,
    get: async () => ({
      getDomainStats: async () => {
        counts.calls++;
        await new Promise((r) => setTimeout(r, 20));
        const p = new Proxy(params(), {
          get: (t, k) => {
            counts.reads++;
            return t[k as string];
          },
        });
        return { params: p };
      },
    }),
  } as unknown as LauncherConnections;
  return { conns, counts };
}

const podOf = (v: VirtualMachineInstance) => ({ metadata: { uid: `pod-${v.metadata?.name}` } }) as Pod;

describe('handler metrics bounded by the VMI spec, not the launcher', () => {
  it("a launcher reporting vcpu.maximum 2e6 (and huge net/block counts) yields only the spec's series", async () => {
    const hostile: Record<string, number | string> = {
      'vcpu.maximum': 2e6,
      'vcpu.current': 2e6,
      'net.count': 2e6,
      'block.count': 2e6,
    };
    for (let i = 0; i < 50; i++) {
      hostile[`vcpu.${i}.time`] = 1e9;
      hostile[`net.${i}.name`] = `tap${i}`;
      hostile[`net.${i}.rx.bytes`] = 1;
      hostile[`block.${i}.name`] = `vd${i}`;
      hostile[`block.${i}.rd.bytes`] = 1;
    }
    const { conns, counts } = fakeLaunchers(() => hostile);
    const m = new HandlerMetrics({
      targets: () => statsTargets([running('big')], 'n1', podOf, conns),
      ready: () => true,
    });
    const samples = parseExposition(await scrape([m], 5_000)).samples;
    const series = (name: string) => samples.filter((s) => s.name === name).length;
    expect(series('kubevirt_vmi_vcpu_seconds_total')).toBe(2);
    expect(series('kubevirt_vmi_network_receive_bytes_total')).toBe(1);
    expect(series('kubevirt_vmi_storage_read_traffic_bytes_total')).toBe(1);
    // The loops ran over the spec's counts: a few hundred key reads, not millions.
    expect(counts.reads).toBeLessThan(1_000);
  });

  it('concurrent scrapes share one collection: 1 stats call per launcher for 50 scrapes', async () => {
    const { conns, counts } = fakeLaunchers(() => ({ 'vcpu.maximum': 2, 'vcpu.0.time': 1e9 }));
    const m = new HandlerMetrics({
      targets: () => statsTargets([running('a'), running('b')], 'n1', podOf, conns),
      ready: () => true,
    });
    const texts = await Promise.all(Array.from({ length: 50 }, () => scrape([m], 5_000)));
    expect(counts.calls).toBe(2);
    for (const t of texts) {
      expect(
        parseExposition(t).samples.filter((s) => s.name === 'kubevirt_vmi_vcpu_seconds_total'),
      ).toHaveLength(2);
    }
    // A later scrape collects afresh.
    await scrape([m], 5_000);
    expect(counts.calls).toBe(4);
  });
});
