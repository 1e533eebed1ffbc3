/**
 * HandlerMetrics on scripted launchers: samples with upstream's names, units and labels
 * from a stats record; a launcher that errs or never answers (libvirt down or
 * restarting) leaves its VMI out of that scrape and counts a scrape error, and the scrape
 * returns at its deadline with what it has.
 */
import { describe, expect, it } from 'vitest';
import { parseExposition } from '../../../src/controllers/metrics/exposition';
import { HandlerMetrics, type StatsTarget } from '../../../src/controllers/metrics/handler-metrics';
import { scrape } from '../../../src/controllers/metrics/server';

const params = {
  'cpu.time': 5_000_000_000,
  'vcpu.maximum': 2,
  'vcpu.0.state': 1,
  'vcpu.0.time': 1_500_000_000,
  'vcpu.0.wait': 20_000_000,
  'vcpu.1.state': 2,
  'vcpu.1.time': 500_000_000,
  'balloon.rss': 100_000,
  'balloon.maximum': 131_072,
  'balloon.major_fault': 7,
  'net.count': 1,
  'net.0.name': 'tap0',
  'net.0.rx.bytes': 1234,
  'net.0.tx.pkts': 9,
  'block.count': 1,
  'block.0.name': 'vda',
  'block.0.rd.reqs': 3,
  'block.0.rd.times': 2_500_000,
};

const target = (name: string, stats: () => Promise<unknown>): StatsTarget => ({
  namespace: 'ns1',
  name,
  node: 'n1',
  stats,
});

function value(text: string, metric: string, labels: Record<string, string>): number | undefined {
  return parseExposition(text).samples.find(
    (s) => s.name === metric && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

describe('HandlerMetrics', () => {
  it('turns a stats record into upstream samples (seconds, bytes, per vcpu/interface/drive)', async () => {
    const m = new HandlerMetrics({
      targets: () => [target('vm1', async () => ({ params }))],
      ready: () => true,
    });
    const text = await scrape([m], 1_000);
    const vm = { namespace: 'ns1', name: 'vm1', node: 'n1' };
    expect(value(text, 'kubevirt_vmi_vcpu_seconds_total', { ...vm, id: '0', state: 'running' })).toBe(1.5);
    expect(value(text, 'kubevirt_vmi_vcpu_seconds_total', { ...vm, id: '1', state: 'blocked' })).toBe(0.5);
    expect(value(text, 'kubevirt_vmi_vcpu_wait_seconds_total', { ...vm, id: '0' })).toBe(0.02);
    // vcpu.1.wait was not reported: no sample rather than a zero.
    expect(value(text, 'kubevirt_vmi_vcpu_wait_seconds_total', { id: '1' })).toBeUndefined();
    expect(value(text, 'kubevirt_vmi_cpu_usage_seconds_total', vm)).toBe(5);
    expect(value(text, 'kubevirt_vmi_memory_resident_bytes', vm)).toBe(102_400_000);
    expect(value(text, 'kubevirt_vmi_memory_domain_bytes', vm)).toBe(134_217_728);
    expect(value(text, 'kubevirt_vmi_memory_pgmajfault_total', vm)).toBe(7);
    expect(value(text, 'kubevirt_vmi_network_receive_bytes_total', { ...vm, interface: 'tap0' })).toBe(1234);
    expect(value(text, 'kubevirt_vmi_network_transmit_packets_total', { interface: 'tap0' })).toBe(9);
    expect(value(text, 'kubevirt_vmi_storage_iops_read_total', { ...vm, drive: 'vda' })).toBe(3);
    expect(value(text, 'kubevirt_vmi_storage_read_times_seconds_total', { drive: 'vda' })).toBe(0.0025);
    expect(value(text, 'kubevirt_virt_handler_ready_status', {})).toBe(1);
  });

  it('serves what it has when a launcher errs or hangs, counting scrape errors, and drops gone VMIs', async () => {
    let targets = [
      target('ok', async () => ({ params })),
      target('err', async () => {
        throw new Error('libvirt: connection refused');
      }),
      target('hang', () => new Promise(() => {})),
    ];
    const m = new HandlerMetrics({ targets: () => targets, ready: () => false });
    // The hanging launcher never answers: the scrape returning at all is the budget at work.
    const text = await scrape([m], 300);
    expect(value(text, 'kubevirt_vmi_vcpu_seconds_total', { name: 'ok', id: '0' })).toBe(1.5);
    expect(value(text, 'kubevirt_vmi_vcpu_seconds_total', { name: 'err' })).toBeUndefined();
    expect(value(text, 'kubevirt_vmi_vcpu_seconds_total', { name: 'hang' })).toBeUndefined();
    const errors = 'kubevirt_ts_virt_handler_domainstats_scrape_errors_total';
    expect(value(text, errors, { reason: 'launcher' })).toBe(1);
    expect(value(text, errors, { reason: 'timeout' })).toBe(1);
    expect(value(text, 'kubevirt_virt_handler_ready_status', {})).toBe(0);
    targets = [];
    const after = await scrape([m], 300);
    expect(value(after, 'kubevirt_vmi_vcpu_seconds_total', { name: 'ok' })).toBeUndefined();
    expect(value(after, errors, { reason: 'timeout' })).toBe(1);
  });
});
