/** The metrics catalog: upstream's names only (except marked own ones), and docs/metrics.md generated from it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderMetricsDoc, upstreamNames } from '../../../scripts/gen-metrics-docs';
import { ALL_METRICS } from '../../../src/controllers/metrics/catalog';

describe('metrics catalog', () => {
  it('serves upstream names, and only names marked own are not upstream', () => {
    const upstream = new Set(upstreamNames());
    const notUpstream = ALL_METRICS.filter((m) => !upstream.has(m.name)).map((m) => m.name);
    const own = ALL_METRICS.filter((m) => m.own).map((m) => m.name);
    // kubevirt_vmi_phase_count is upstream's name (now a recording rule there; served directly here).
    expect(notUpstream.sort()).toEqual([...own, 'kubevirt_vmi_phase_count'].sort());
    expect(own.every((n) => n.startsWith('kubevirt_ts_'))).toBe(true);
    expect(new Set(ALL_METRICS.map((m) => m.name)).size).toBe(ALL_METRICS.length);
  });

  it('docs/metrics.md is generated from it', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'metrics.md'), 'utf8');
    expect(doc).toBe(renderMetricsDoc());
  });
});
