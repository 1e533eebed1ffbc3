/**
 * The per-VMI domain families rendered without prom-client: the same text prom-client
 * writes for the same samples (families, order, labels, values, escaping, counters never
 * negative), every family present with no samples, and label values escaped.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HANDLER_DOMAIN_METRICS } from '../../../src/controllers/metrics/catalog';
import { baseLabels, renderDomainFamilies } from '../../../src/controllers/metrics/domain-exposition';
import { domainSamples } from '../../../src/controllers/metrics/domain-stats';

const stats = (n: number) => ({
  'cpu.time': 5e9 * n,
  'vcpu.maximum': 2,
  'vcpu.0.state': 1,
  'vcpu.0.time': 1.5e9 * n,
  'vcpu.1.state': 2,
  'vcpu.1.time': 5e8,
  'balloon.rss': 100_000,
  'balloon.maximum': 131_072,
  'net.count': 1,
  'net.0.name': 'tap0',
  'net.0.rx.bytes': 1234 * n,
  'net.0.tx.bytes': -5,
  'block.count': 1,
  'block.0.name': 'vda',
  'block.0.rd.reqs': 3,
  'job.data_remaining': 4096,
});

/** What prom-client writes for the same VMIs. */
async function viaPromClient(vmis: { node: string; namespace: string; name: string; n: number }[]) {
  const registry = new Registry();
  const metrics = new Map(
    HANDLER_DOMAIN_METRICS.map((d) => {
      const cfg = { name: d.name, help: d.help, labelNames: [...d.labels], registers: [registry] };
      return [d.name, d.type === 'counter' ? new Counter(cfg) : new Gauge(cfg)] as const;
    }),
  );
  for (const v of vmis)
    for (const s of domainSamples(stats(v.n))) {
      const m = metrics.get(s.name);
      const labels = { node: v.node, namespace: v.namespace, name: v.name, ...s.labels };
      if (m instanceof Counter) m.inc(labels, Math.max(0, s.value));
      else m?.set(labels, s.value);
    }
  return registry.metrics();
}

describe('renderDomainFamilies', () => {
  it('writes what prom-client writes for the same samples', async () => {
    const vmis = [
      { node: 'n1', namespace: 'ns1', name: 'a', n: 1 },
      { node: 'n1', namespace: 'ns2', name: 'we"ird\\na\nme', n: 2 },
    ];
    const text = renderDomainFamilies(
      vmis.map((v) => ({
        base: baseLabels(v.node, v.namespace, v.name),
        samples: domainSamples(stats(v.n)),
      })),
    );
    expect(text).toBe(await viaPromClient(vmis));
    expect(text).toContain(
      'kubevirt_vmi_network_receive_bytes_total{node="n1",namespace="ns2",name="we\\"ird\\\\na\\nme",interface="tap0"} 2468',
    );
    // A counter from a snapshot never goes below zero.
    expect(text).toContain(
      'kubevirt_vmi_network_transmit_bytes_total{node="n1",namespace="ns1",name="a",interface="tap0"} 0',
    );
  });

  it('writes every family header with no VMIs, as prom-client does', async () => {
    const text = renderDomainFamilies([]);
    expect(text).toBe(await viaPromClient([]));
    expect(text.match(/^# TYPE /gm)).toHaveLength(HANDLER_DOMAIN_METRICS.length);
  });
});
