/**
 * Hostile manifests are refused early, naming the file and the limit: what the node bound
 * once ignored (aliases, `---` markers, comments, `?` keys) is counted before any tree is
 * built, documents are bounded, and nesting past MAX_OBJECT_DEPTH is an error instead of a
 * stack overflow. Each input is generated at a size the old loader took seconds and
 * hundreds of MB on (a 15 MB one took minutes and GBs); the test bounds time and heap.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_OBJECT_DEPTH } from '../../../src/api/json-bounds';
import { DEFAULT_MAX_DOCUMENTS, DEFAULT_MAX_NODES, loadManifests } from '../../../src/api/manifest/load';
import { validateFiles } from '../../../src/cli/commands/validate';

const N = 400_000;

/** Loads `text`, asserting it finished fast without growing the heap much. */
function loadBounded(text: string, filename: string) {
  const heap = process.memoryUsage().heapUsed;
  const start = performance.now();
  const r = loadManifests(text, { filename });
  expect(performance.now() - start).toBeLessThan(3000);
  expect(process.memoryUsage().heapUsed - heap).toBeLessThan(100 * 1024 * 1024);
  return r;
}

const vmi = (spec: string) =>
  `apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: a\nspec:\n${spec}`;

describe('hostile manifests', () => {
  it('counts aliases: a flow sequence of aliases is refused before it is built', () => {
    const r = loadBounded(`a: &a x\nb: [${'*a, '.repeat(N)}*a]\n`, 'alias.yaml');
    expect(r.errors.map((e) => e.message)).toEqual([
      `alias.yaml: input has more than ${DEFAULT_MAX_NODES} YAML nodes (values, lists, maps, aliases, keys, anchors, tags and comments), over the limit`,
    ]);
  });

  it('counts comments and `?` keys', () => {
    for (const [name, text] of [
      ['comments.yaml', '#\n'.repeat(N)],
      ['keys.yaml', '? \n'.repeat(N)],
      ['colons.yaml', ': \n'.repeat(N)],
    ]) {
      const r = loadBounded(text, name);
      expect(r.errors.map((e) => [e.code, e.filename])).toEqual([['too-large', name]]);
      expect(r.errors[0].detail).toMatch(`more than ${DEFAULT_MAX_NODES} YAML nodes`);
    }
  });

  it('bounds the number of documents (`---` and `...` markers)', () => {
    for (const marker of ['---\n', '...\n', '--- #\n']) {
      const r = loadBounded(marker.repeat(N), 'docs.yaml');
      expect(r.errors.map((e) => e.message)).toEqual([
        `docs.yaml: input has more than ${DEFAULT_MAX_DOCUMENTS} YAML documents, over the limit`,
      ]);
    }
    // Up to the limit is fine.
    const ok = loadManifests(`${vmi('  domain: {devices: {}}\n')}---\n`.repeat(3));
    expect(ok.errors).toEqual([]);
    expect(ok.objects).toHaveLength(3);
  });

  it('counts what aliases expand to: 90 references to a 1,500-key map are 135,000 values', () => {
    // 90 references stay under the library's maxAliasCount (100): only the expanded size tells.
    const keys = Array.from({ length: 1500 }, (_, i) => `k${i}: v`).join(', ');
    const refs = Array.from({ length: 45 }, () => '*m').join(', ');
    const text = `m: &m {${keys}}\nx: [${refs}]\ny: [${refs}]\n`;
    const r = loadBounded(text, 'expand.yaml');
    expect(r.errors.map((e) => e.message)).toEqual([
      `expand.yaml: document 1: decodes to more than ${DEFAULT_MAX_NODES} values once aliases are expanded, over the limit`,
    ]);
  });

  it('refuses JSON and YAML nested deeper than the limit, naming the file and the limit', () => {
    const deep = (d: number) => `${'['.repeat(d)}${']'.repeat(d)}`;
    const json = `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"a"},"spec":{"x":${deep(1000)}}}`;
    const r = loadBounded(json, 'deep.json');
    expect(r.errors.map((e) => e.message)).toEqual([
      `deep.json: input nests flow collections more than ${MAX_OBJECT_DEPTH} levels deep, over the limit`,
    ]);
    for (const d of [1000, 20_000]) {
      const y = loadBounded(vmi(`  x: ${deep(d)}\n`), 'deep.yaml');
      expect(y.errors.map((e) => e.message)).toEqual([
        `deep.yaml: input nests flow collections more than ${MAX_OBJECT_DEPTH} levels deep, over the limit`,
      ]);
    }
    // Block nesting (no brackets) is caught after parsing.
    const block = Array.from({ length: 600 }, (_, i) => `${' '.repeat(i)}k:`).join('\n');
    const b = loadBounded(`${block} 1\n`, 'block.yaml');
    expect(b.errors.map((e) => e.code)).toEqual(['too-large']);
    expect(b.errors[0].detail).toMatch(`more than ${MAX_OBJECT_DEPTH} levels deep`);
    // At the limit it loads (and validate prints it).
    const at = loadManifests(vmi(`  domain: {devices: {}}\n  x: ${deep(MAX_OBJECT_DEPTH - 2)}\n`));
    expect(at.errors).toEqual([]);
  });

  it('validate reports a 1,000-deep valid JSON object as an error instead of a stack overflow', async () => {
    const file = join(tmpdir(), `kvts-deep-${process.pid}.json`);
    const deep = `${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}`;
    writeFileSync(
      file,
      `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"a"},"spec":{"domain":{"devices":{},"resources":{"requests":{"memory":"64Mi"}}},"x":${deep}}}`,
    );
    const r = await validateFiles([file]);
    expect(r.ok).toBe(false);
    expect(r.errors).toEqual([
      `${file}: input nests flow collections more than ${MAX_OBJECT_DEPTH} levels deep, over the limit`,
    ]);
  });
});
