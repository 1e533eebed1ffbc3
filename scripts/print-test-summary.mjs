// Prints vitest's JSON results (one or more files, summed) as one plain closing line:
// "tests: N passed, N failed, N skipped". A missing file is an error.
import { readFileSync } from 'node:fs';

const files = process.argv.slice(2);
if (files.length === 0) files.push('test-results.json');
let passed = 0;
let failed = 0;
let skipped = 0;
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
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
