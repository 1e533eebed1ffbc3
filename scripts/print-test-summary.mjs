// Prints vitest's JSON results (one or more files, summed) as one plain closing line:
// "tests: N passed, N failed, N skipped". Failed tests (and files that failed outside any
// test, e.g. in a hook) are listed first with the head of their message, so the tail of a
// CI log names what failed. A missing file is an error.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const files = process.argv.slice(2);
if (files.length === 0) files.push('test-results.json');
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
const head = (msg) =>
  String(msg ?? '')
    .split('\n')
    .slice(0, 3)
    .join(' | ')
    .slice(0, 300);
for (const file of files) {
  let r;
  try {
    r = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    console.error(`no test results in ${file}: ${e.message}`);
    process.exit(1);
  }
  passed += r.numPassedTests ?? 0;
  failed += r.numFailedTests ?? 0;
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  for (const suite of r.testResults ?? []) {
    const name = relative(process.cwd(), suite.name ?? '');
    const bad = (suite.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of bad) failures.push(`${name} > ${a.fullName}: ${head(a.failureMessages?.[0])}`);
    if (bad.length === 0 && suite.status === 'failed') failures.push(`${name}: ${head(suite.message)}`);
  }
}
for (const f of failures) console.log(`FAILED ${f}`);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
