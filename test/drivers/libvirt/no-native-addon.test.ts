/**
 * The package must install without a compiler: no native addon (`*.node`) anywhere in the
 * production dependency tree, and the libvirt client itself loads only Node built-ins.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(import.meta.dirname, '../../..');

function findNodeFiles(dir: string, out: string[], depth = 0): void {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e);
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(p);
    } catch {
      continue;
    }
    if (st.isDirectory()) {
      // Nested node_modules are packages of their own, listed separately by npm ls.
      if (e === 'node_modules' && depth > 0) continue;
      findNodeFiles(p, out, depth + 1);
    } else if (e.endsWith('.node')) out.push(p);
  }
}

describe('no native addon', () => {
  it('the scan finds a planted *.node file (so an empty result means something)', () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'kvts-native-'));
    try {
      mkdirSync(path.join(tmp, 'build', 'Release'), { recursive: true });
      writeFileSync(path.join(tmp, 'build', 'Release', 'addon.node'), '');
      const found: string[] = [];
      findNodeFiles(tmp, found);
      expect(found).toEqual([path.join(tmp, 'build', 'Release', 'addon.node')]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('finds no *.node file in any production dependency', () => {
    // npm ls exits non-zero on tree problems unrelated to this check (extraneous or invalid
    // packages) but still prints every path it resolved; the paths are what matter here.
    const res = spawnSync('npm', ['ls', '--omit=dev', '--parseable', '--all'], {
      cwd: repoRoot,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    const out = res.stdout;
    const dirs = [...new Set(out.split('\n').filter((l) => l.trim() !== ''))];
    // The list includes the package itself and its runtime dependencies.
    expect(dirs[0]).toBe(repoRoot);
    expect(dirs.some((d) => d.includes(`${path.sep}@grpc${path.sep}grpc-js`))).toBe(true);
    const found: string[] = [];
    for (const d of dirs.slice(1)) findNodeFiles(d, found);
    expect(found).toEqual([]);
  });

  it('the libvirt client imports only Node built-ins and its own files', () => {
    const dir = path.join(repoRoot, 'src/drivers/libvirt');
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d)) {
        const p = path.join(d, e);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    walk(dir);
    for (const f of files) {
      for (const m of readFileSync(f, 'utf8').matchAll(/from '([^']+)'/g)) {
        expect(m[1].startsWith('.') || m[1].startsWith('node:'), `${f} imports ${m[1]}`).toBe(true);
      }
    }
  });
});
