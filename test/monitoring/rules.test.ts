/**
 * The alert and recording rules: `promtool check rules` accepts them, `promtool test
 * rules` passes their unit tests, every alert has a test where it fires and one where it
 * does not, and monitoring/prometheusrule.yaml is the generated PrometheusRule of them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderPrometheusRule } from '../../scripts/gen-prometheusrule';
import { integration } from '../support/integration';
import { PROMTOOL } from '../support/prometheus';

const dir = join(import.meta.dirname, '..', '..', 'monitoring');
const rulesFile = join(dir, 'rules', 'kubevirt.rules.yaml');
const testsDir = join(dir, 'rules', 'tests');
const testFiles = readdirSync(testsDir)
  .filter((f) => f.endsWith('.test.yaml'))
  .map((f) => join(testsDir, f));

interface RuleTests {
  tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}

const hasPromtool = integration(
  'promtool',
  existsSync(PROMTOOL),
  `${PROMTOOL} is missing: scripts/setup-host.sh --with-kube installs it`,
);

describe('monitoring rules', () => {
  const alerts = (
    parse(readFileSync(rulesFile, 'utf8')) as { groups: { rules: { alert?: string }[] }[] }
  ).groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));

  it.runIf(hasPromtool)('promtool check rules accepts them', () => {
    const r = spawnSync(PROMTOOL, ['check', 'rules', rulesFile], { encoding: 'utf8' });
    expect(r.stdout + r.stderr).toContain('SUCCESS: 16 rules found');
    expect(r.status).toBe(0);
  });

  it.runIf(hasPromtool)('promtool test rules passes every unit test', () => {
    const r = spawnSync(PROMTOOL, ['test', 'rules', ...testFiles], { encoding: 'utf8' });
    expect(r.stdout + r.stderr, r.stdout + r.stderr).not.toContain('FAILED');
    expect(r.status).toBe(0);
  });

  it('every alert has a test where it fires and one where it does not', () => {
    const fires = new Set<string>();
    const quiet = new Set<string>();
    for (const f of testFiles) {
      for (const t of (parse(readFileSync(f, 'utf8')) as RuleTests).tests) {
        for (const a of t.alert_rule_test ?? []) (a.exp_alerts.length ? fires : quiet).add(a.alertname);
      }
    }
    expect(alerts.length).toBe(12);
    for (const a of alerts) {
      expect(fires.has(a), `${a} has no firing test`).toBe(true);
      expect(quiet.has(a), `${a} has no not-firing test`).toBe(true);
    }
  });

  it('monitoring/prometheusrule.yaml is generated from the rule file', () => {
    expect(readFileSync(join(dir, 'prometheusrule.yaml'), 'utf8')).toBe(
      renderPrometheusRule(readFileSync(rulesFile, 'utf8')),
    );
  });
});
