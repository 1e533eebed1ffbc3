/** The scale benchmark's pure helpers (bench/scale/stats.ts). */
import { describe, expect, it } from 'vitest';
import { benchLine, percentile, requestTotal, VMI_WRITE_VERBS } from '../../bench/scale/stats';

describe('percentile', () => {
  it('takes the nearest rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 95)).toBe(95);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([1, 2, 3], 0)).toBe(1);
  });
  it('is NaN for no samples', () => {
    expect(percentile([], 50)).toBeNaN();
  });
});

describe('requestTotal', () => {
  // Lines as kube-apiserver v1.34 exposes them on /metrics.
  const metrics = [
    '# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, ...',
    '# TYPE apiserver_request_total counter',
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachineinstances",scope="resource",subresource="status",verb="PUT",version="v1"} 12',
    'apiserver_request_total{code="409",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachineinstances",scope="resource",subresource="",verb="PUT",version="v1"} 3',
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachineinstances",scope="resource",subresource="",verb="PATCH",version="v1"} 5',
    'apiserver_request_total{code="201",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachineinstances",scope="resource",subresource="",verb="POST",version="v1"} 100',
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachineinstances",scope="namespace",subresource="",verb="LIST",version="v1"} 4',
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="kubevirt.io",resource="virtualmachines",scope="resource",subresource="status",verb="PUT",version="v1"} 40',
    'apiserver_request_duration_seconds_count{resource="virtualmachineinstances",verb="PUT"} 99',
  ].join('\n');

  it('sums the writes of one resource, every subresource and code', () => {
    expect(requestTotal(metrics, 'virtualmachineinstances', VMI_WRITE_VERBS)).toBe(20);
  });
  it('leaves out other verbs, resources and metrics', () => {
    expect(requestTotal(metrics, 'virtualmachineinstances', ['POST'])).toBe(100);
    expect(requestTotal(metrics, 'virtualmachines', VMI_WRITE_VERBS)).toBe(40);
    expect(requestTotal(metrics, 'pods', VMI_WRITE_VERBS)).toBe(0);
  });
});

describe('benchLine', () => {
  it('prints the issue format', () => {
    expect(
      benchLine({
        vms: 500,
        backend: 'apiserver',
        nodes: 5,
        allRunningS: 12.345,
        p50Ms: 4000.4,
        p95Ms: 9000.6,
        writesPerVmi: 4.5,
        controllerRssMb: 120.2,
        apiserverRssMb: 800.7,
        controllerQps: 200,
      }),
    ).toBe(
      'BENCH scale vms=500 backend=apiserver nodes=5 all_running_s=12.35 p50_ms=4000 p95_ms=9001 writes_per_vmi=4.50 controller_rss_mb=120 apiserver_rss_mb=801 controller_qps=200',
    );
  });
});
