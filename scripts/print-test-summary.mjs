// Prints vitest's JSON results (one or more files, summed) as one plain closing line:
// "tests: N passed, N failed, N skipped". Failed tests, and failures outside any test,
// are listed first with the head of their message, so the tail of a CI log names what
// failed; the failed count includes the latter ("N failed (T tests, F outside any test)"),
// and the exit status is 1 when anything failed.
//
// Arguments: FILE or FILE:RC, RC being the exit status of the vitest run that wrote FILE.
// Failures outside any test: a file that failed in a hook (an afterAll leftover check) or
// on import, and, given RC, a run that exited non-zero with nothing failed in its report
// (vitest writes the report before a global setup's teardown runs, and leaves unhandled
// errors out of it) or wrote no report at all.
import { readFileSync } from 'node:fs';
import { relative, sep } from 'node:path';

const args = process.argv.slice(2);
if (args.length === 0) args.push('test-results.json');
let passed = 0;
let failedTests = 0;
let skipped = 0;
const failures = [];
let outside = 0;
const head = (msg) =>
  String(msg ?? '')
    .split('\n')
    .slice(0, 3)
    .join(' | ')
    .slice(0, 300);
const shown = (path) => (path.startsWith(process.cwd() + sep) ? relative(process.cwd(), path) : path);
const failOutside = (what, message) => {
  outside++;
  failures.push(`${what} (outside any test): ${message}`);
};

for (const arg of args) {
  const m = /^(.*):(\d+)$/.exec(arg);
  const file = m ? m[1] : arg;
  const rc = m ? Number(m[2]) : undefined;
  let r;
  try {
    r = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    if (rc === undefined) {
      console.error(`no test results in ${file}: ${e.message}`);
      process.exit(1);
    }
    failOutside(file, `no report (vitest exited ${rc}): ${e.message}`);
    continue;
  }
  // Errors of files and describe blocks (hooks), from scripts/vitest-hook-errors.ts.
  let hookErrors = {};
  try {
    hookErrors = JSON.parse(readFileSync(file.replace(/\.json$/, '-hook-errors.json'), 'utf8')).files ?? {};
  } catch {}
  passed += r.numPassedTests ?? 0;
  failedTests += r.numFailedTests ?? 0;
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  let failedHere = r.numFailedTests ?? 0;
  for (const suite of r.testResults ?? []) {
    const name = shown(suite.name ?? '');
    const bad = (suite.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of bad) failures.push(`${name} > ${a.fullName}: ${head(a.failureMessages?.[0])}`);
    // A file error (its message) beside failed tests is a failure of its own; with no
    // failed test, a failed file failed outside them even when vitest gave no message.
    if (suite.status === 'failed' && (suite.message || bad.length === 0)) {
      const why = suite.message || hookErrors[suite.name]?.join('\n');
      failOutside(name, head(why) || 'failed outside its tests (a hook or a describe block)');
      failedHere++;
    }
  }
  if (rc !== undefined && rc !== 0 && failedHere === 0) {
    failOutside(
      file,
      `vitest exited ${rc} with no failed test or file in its report (an unhandled error or a global setup/teardown error: see the log above)`,
    );
  }
}
for (const f of failures) console.log(`FAILED ${f}`);
const failed = failedTests + outside;
const breakdown = outside ? ` (${failedTests} tests, ${outside} outside any test)` : '';
console.log(`tests: ${passed} passed, ${failed} failed${breakdown}, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
