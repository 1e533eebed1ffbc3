// A vitest reporter writing the errors vitest's JSON report leaves out: those of a file
// or a describe block (a failed beforeAll/afterAll), and unhandled errors. The closing
// summary (scripts/print-test-summary.mjs) prints their heads, so the tail of a CI log says
// why a file failed outside its tests, not only that it did.
// Output: the file named by KVTS_HOOK_ERRORS (nothing without it).
import { writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

const text = (e: SerializedError) => `${e.name ?? 'Error'}: ${e.message ?? ''}`;

export default class HookErrorsReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<SerializedError>): void {
    const out = process.env.KVTS_HOOK_ERRORS;
    if (!out) return;
    const files: Record<string, string[]> = {};
    for (const m of modules) {
      const errors = [...m.errors(), ...[...m.children.allSuites()].flatMap((s) => s.errors())].map(text);
      if (errors.length) files[m.moduleId] = errors;
    }
    writeFileSync(out, JSON.stringify({ files, unhandled: unhandled.map(text) }, null, 1));
  }
}
