/**
 * Test support: the project's own manifests under test/fixtures/manifests, one concern per
 * file (a disk kind, a firmware, a network binding, a kind...). The readers take another
 * folder too, so the upstream-compatibility suites can read upstream's examples/ alike.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadManifests } from '../../src/api/manifest';

/** The project's fixture manifests. */
export const fixturesDir = path.resolve(import.meta.dirname, '../fixtures/manifests');

/** Every manifest file name in a folder, sorted. */
export function fixtureFiles(dir = fixturesDir): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
}

/** The kubevirt objects of one manifest file (fresh copies each call). */
export function fixtureObjects(
  file: string,
  dir = fixturesDir,
): { kind: string; object: Record<string, unknown> }[] {
  const text = readFileSync(path.join(dir, file), 'utf8');
  const result = loadManifests(text, { filename: file });
  if (result.errors.length > 0) throw new Error(result.errors.map((e) => e.message).join('\n'));
  return result.objects
    .filter((o) => o.known)
    .map((o) => ({ kind: o.kind, object: structuredClone(o.object) as unknown as Record<string, unknown> }));
}

/** The single object of a manifest file, typed by the caller. */
export function fixture<T>(file: string, dir = fixturesDir): T {
  const objs = fixtureObjects(file, dir);
  if (objs.length !== 1) throw new Error(`${file} holds ${objs.length} kubevirt objects, expected 1`);
  return objs[0].object as T;
}

/** The text of one manifest file. */
export function fixtureText(file: string, dir = fixturesDir): string {
  return readFileSync(path.join(dir, file), 'utf8');
}
