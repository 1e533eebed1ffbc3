/** Manifest loading cost is bounded: a node limit before any tree is built, linear duplicate-key checks. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_NODES, loadManifests } from '../../../src/api/manifest/load';

const vmi = (extra = '') =>
  `apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: a\n${extra}spec:\n  domain:\n    devices: {}\n`;

describe('manifest loading bounds', () => {
  it('refuses a flow sequence with more nodes than the limit, before building it', () => {
    const text = `[${'1,'.repeat(DEFAULT_MAX_NODES + 10)}1]`;
    const r = loadManifests(text, { filename: 'seq.json' });
    expect(r.errors.map((e) => e.message)).toEqual([
      `seq.json: input has more than ${DEFAULT_MAX_NODES} YAML nodes (values, lists, maps, aliases, keys, anchors, tags and comments), over the limit`,
    ]);
    const y = loadManifests(`a: [${'x, '.repeat(DEFAULT_MAX_NODES)}x]\n`, { filename: 'seq.yaml' });
    expect(y.errors[0].code).toBe('too-large');
  });

  it('honours maxNodes and loads a manifest under it', () => {
    expect(loadManifests(vmi(), { maxNodes: 5 }).errors[0].detail).toMatch(/more than 5 YAML nodes/);
    const ok = loadManifests(vmi(), { maxNodes: 100 });
    expect(ok.errors).toEqual([]);
    expect(ok.objects.map((o) => o.kind)).toEqual(['VirtualMachineInstance']);
  });

  it('finds a repeated key in YAML at any depth, with its position', () => {
    const r = loadManifests(vmi('  labels:\n    a: "1"\n    b: "2"\n    a: "3"\n'), { filename: 'd.yaml' });
    expect(r.errors.map((e) => e.message)).toEqual([
      'd.yaml:8:5: document 1: YAML syntax error: Map keys must be unique',
    ]);
    // Merge keys may repeat.
    const m = loadManifests(`x: &x {a: 1}\ny: &y {b: 2}\nz:\n  <<: *x\n  <<: *y\n`);
    expect(m.errors.filter((e) => e.code === 'syntax')).toEqual([]);
  });

  it('finds a repeated key in JSON, escapes included, with its position', () => {
    const text =
      '{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance",\n "metadata":{"name":"a","n\\u0061me":"b"}}';
    const r = loadManifests(text, { filename: 'd.json' });
    expect(r.errors.map((e) => e.message)).toEqual([
      'd.json:2:25: document 1: JSON syntax error: Map keys must be unique',
    ]);
    // The same key in sibling objects, and keys inside strings, are not repeats.
    const ok = loadManifests('[{"a":"{\\"a\\":1,","b":1},{"a":2}]');
    expect(ok.errors.filter((e) => e.code === 'syntax')).toEqual([]);
  });

  it('loads 40,000 distinct keys (the duplicate check is one pass with a set)', () => {
    const labels = Array.from({ length: 40_000 }, (_, i) => `    k${i}: v`).join('\n');
    const r = loadManifests(vmi(`  labels:\n${labels}\n`));
    expect(r.errors.filter((e) => e.code === 'syntax')).toEqual([]);
    expect(r.objects).toHaveLength(1);
  });

  it('still locates field errors in JSON input', () => {
    const r = loadManifests(
      '{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance",\n"metadata":{"name":"a"},\n"spec":{"domain":{"devices":{}},"bogus":1}}',
      { filename: 'f.json' },
    );
    expect(r.warnings.map((w) => [w.path, w.line])).toContainEqual(['spec.bogus', 3]);
  });
});
