/**
 * scripts/print-test-summary.mjs, the test command's closing line: it must count every
 * failure that fails the vitest stage, not only failed tests, so a CI log's last lines
 * name what failed (a file whose afterAll leftover check threw reported "0 failed").
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const fixtures = join(__dirname, '../fixtures/test-summary');
const summary = (...args: string[]) => {
  const r = spawnSync(process.execPath, ['scripts/print-test-summary.mjs', ...args], {
    encoding: 'utf8',
    cwd: join(__dirname, '../..'),
  });
  return { status: r.status, lines: r.stdout.trim().split('\n'), stderr: r.stderr };
};

describe('print-test-summary', () => {
  it('counts and names files that failed outside any test (a hook, an import)', () => {
    const { status, lines } = summary(join(fixtures, 'file-level-failure.json'));
    expect(lines).toEqual([
      "FAILED /repo/test/e2e/metrics-prometheus.test.ts (outside any test): expected [ 'table ip filter' ] to deeply equal [] |     at afterAll (test/e2e/metrics-prometheus.test.ts:171:5)",
      'FAILED /repo/test/e2e/broken-import.test.ts (outside any test): Failed to load url ./missing (resolved id: ./missing)',
      'tests: 2 passed, 2 failed (0 tests, 2 outside any test), 1 skipped',
    ]);
    expect(status).toBe(1);
  });

  it('counts failed tests as before', () => {
    const { status, lines } = summary(join(fixtures, 'test-failure.json'));
    expect(lines).toEqual([
      'FAILED /repo/test/a.test.ts > a breaks: AssertionError: expected 1 to be 2 |     at test/a.test.ts:9:3',
      'tests: 1 passed, 1 failed, 0 skipped',
    ]);
    expect(status).toBe(1);
  });

  it('counts a vitest run that exited non-zero with nothing failed in its report', () => {
    // A global setup's teardown error or an unhandled error: vitest writes the JSON report
    // before either, so only its exit status tells.
    const file = join(fixtures, 'clean.json');
    const { status, lines } = summary(`${file}:1`);
    expect(lines).toEqual([
      `FAILED ${file} (outside any test): vitest exited 1 with no failed test or file in its report (an unhandled error or a global setup/teardown error: see the log above)`,
      'tests: 1 passed, 1 failed (0 tests, 1 outside any test), 0 skipped',
    ]);
    expect(status).toBe(1);
  });

  it('counts a missing report of a run that failed, and passes a clean run', () => {
    const missing = join(fixtures, 'no-such-report.json');
    const r = summary(join(fixtures, 'clean.json:0'), `${missing}:2`);
    expect(r.lines).toEqual([
      `FAILED ${missing} (outside any test): no report (vitest exited 2): ENOENT: no such file or directory, open '${missing}'`,
      'tests: 1 passed, 1 failed (0 tests, 1 outside any test), 0 skipped',
    ]);
    expect(r.status).toBe(1);
    const clean = summary(join(fixtures, 'clean.json:0'));
    expect(clean.lines).toEqual(['tests: 1 passed, 0 failed, 0 skipped']);
    expect(clean.status).toBe(0);
  });
});
