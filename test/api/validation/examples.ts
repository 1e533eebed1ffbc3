/** Test helper: upstream's example manifests, read from ../shared/kubevirt/examples. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadManifests } from '../../../src/api/manifest';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The folder holding upstream's 47 example manifests. */
export const examplesDir = path.resolve(repoRoot, '../shared/kubevirt/examples');

/** Every example file name. */
export function exampleFiles(): string[] {
  return readdirSync(examplesDir).filter((f) => f.endsWith('.yaml'));
}

/** The kubevirt objects of one example file (fresh copies each call). */
export function exampleObjects(file: string): { kind: string; object: Record<string, unknown> }[] {
  const text = readFileSync(path.join(examplesDir, file), 'utf8');
  const result = loadManifests(text, { filename: file });
  if (result.errors.length > 0) throw new Error(result.errors.map((e) => e.message).join('\n'));
  return result.objects
    .filter((o) => o.known)
    .map((o) => ({ kind: o.kind, object: structuredClone(o.object) as unknown as Record<string, unknown> }));
}

/** The single object of an example file, typed by the caller. */
export function example<T>(file: string): T {
  const objs = exampleObjects(file);
  if (objs.length !== 1) throw new Error(`${file} holds ${objs.length} kubevirt objects, expected 1`);
  return objs[0].object as T;
}
