/**
 * The launcher ships as one self-contained file (dist/cli/virt-launcher.js), and
 * `kubevirt-ts virt-launcher` reaches it without loading the rest of the CLI. One
 * launcher runs per VM, so this is what keeps its memory small (bench:node measures it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEntry } from '../e2e/node-harness';
import { integration } from '../support/integration';

const cli = cliEntry();
const bundle = join(dirname(cli), 'virt-launcher.js');
const run = integration('launcher bundle', existsSync(bundle), `${bundle} is not built (npm run build)`);

describe.runIf(run)('the launcher bundle', () => {
  it('loads nothing but Node built-ins (its dependencies are inlined)', () => {
    // Record every module the bundle asks for, ESM (a resolve hook) and CommonJS (Module._load).
    const dir = mkdtempSync(join(tmpdir(), 'kvts-bundle-'));
    const log = join(dir, 'loaded.txt');
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(s, c, next) { appendFileSync(${JSON.stringify(log)}, 'esm ' + s + '\\n'); return next(s, c); }`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register, createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
register('./hooks.mjs', import.meta.url);
const Module = createRequire(import.meta.url)('node:module');
const load = Module._load;
Module._load = function (r, ...rest) { appendFileSync(${JSON.stringify(log)}, 'cjs ' + r + '\\n'); return load.call(this, r, ...rest); };`,
    );
    try {
      const r = spawnSync(process.execPath, ['--import', join(dir, 'register.mjs'), bundle, '--name'], {
        encoding: 'utf8',
      });
      expect(r.stderr).toContain('--name needs a value');
      const loaded = readFileSync(log, 'utf8').trim().split('\n');
      const foreign = loaded
        .map((l) => l.slice(4))
        .filter((s) => s !== bundle && !s.endsWith('/virt-launcher.js'))
        .filter((s) => !s.startsWith('node:') && !isBuiltin(s));
      expect(foreign).toEqual([]);
      // The hooks do see the bundle's own imports: it uses these built-ins.
      expect(loaded).toContain('esm node:module');
      expect(loaded.some((l) => l === 'cjs http2' || l === 'cjs node:http2')).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('`kubevirt-ts virt-launcher` runs it: a bad flag exits 2 naming the flag, before commander sees it', () => {
    const r = spawnSync(process.execPath, [cli, 'virt-launcher', '--no-such-flag', 'x'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    // A JSON line like every launcher line (pino: level, component, msg).
    expect(JSON.parse(r.stderr.trim())).toMatchObject({
      level: 'error',
      component: 'virt-launcher',
      msg: 'virt-launcher: unknown flag "--no-such-flag"',
    });
  });

  it('the bundle also runs on its own, with or without the subcommand word', () => {
    for (const args of [['--name'], ['virt-launcher', '--name']]) {
      const r = spawnSync(process.execPath, [bundle, ...args], { encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(JSON.parse(r.stderr.trim())).toMatchObject({
        level: 'error',
        msg: 'virt-launcher: --name needs a value',
      });
    }
  });
});
