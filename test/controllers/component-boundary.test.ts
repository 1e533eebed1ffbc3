import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * DESIGN.md's component boundary: components talk to each other through the API, gRPC
 * or HTTP, never by importing each other's internals. Under src/controllers/:
 * - shared packages (below) may be imported by every component and import no component;
 * - composition roots (composition/ and the package index) wire components together;
 * - every other folder is a component and imports only itself, the shared packages and
 *   the layers outside src/controllers (a new folder counts as a component until it is
 *   listed here).
 * src/cli sits outside src/controllers and is a composition root too.
 */
const SHARED = new Set(['common', 'config', 'launcher-protocol', 'logging', 'metrics', 'runtime']);
const COMPOSITION = new Set(['composition', 'index.ts']);

const controllers = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/controllers');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** Relative specifiers of every static import, re-export and dynamic import. */
function relativeImports(source: string): string[] {
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]*)['"]/g;
  return [...source.matchAll(re)].map((m) => m[1]);
}

/** The top-level entry of src/controllers a path is in, or undefined outside it. */
function topOf(path: string): string | undefined {
  const rel = relative(controllers, path);
  if (rel.startsWith('..')) return undefined;
  return rel.split(sep)[0];
}

/** `file: import -> folder` for every import that crosses the boundary. */
function violations(): string[] {
  const out: string[] = [];
  for (const file of tsFiles(controllers)) {
    const from = topOf(file)!;
    if (COMPOSITION.has(from)) continue;
    for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
      const to = topOf(resolve(dirname(file), spec));
      if (to === undefined || to === from || SHARED.has(to)) continue;
      out.push(`${relative(controllers, file)}: '${spec}' reaches into ${to}/`);
    }
  }
  return out.sort();
}

describe('component boundary (DESIGN.md)', () => {
  it('the scanner sees the component folders and their imports', () => {
    const tops = readdirSync(controllers);
    for (const c of [
      'virt-api',
      'virt-controller',
      'virt-handler',
      'virt-launcher',
      'virt-operator',
      'local',
    ]) {
      expect(tops).toContain(c);
    }
    expect(
      relativeImports(`import { a } from '../x';\nexport * from './y';\nawait import('../../z');`),
    ).toEqual(['../x', './y', '../../z']);
  });

  it('no component folder under src/controllers imports another component, and no shared package imports a component', () => {
    expect(violations()).toEqual([]);
  });
});
