import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { integration } from '../support/integration';

// Proves the published shape: `npm pack` of the built package installs into an empty
// project, where the subpath exports load on this Node. Needs `dist/` (the test command
// builds before it runs the tests) and the npm registry for the dependencies.
const root = resolve(__dirname, '../..');
// `npm run build:run` (what `npm run up` builds) leaves the type declarations out.
const built = existsSync(join(root, 'dist/api/index.js')) && existsSync(join(root, 'dist/api/index.d.ts'));
const run = integration(
  'package tarball',
  built,
  'dist/ is not built with type declarations: run `npm run build` first',
);

describe.runIf(run)('npm pack', () => {
  const work = mkdtempSync(join(tmpdir(), 'kvts-pack-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('installs into an empty project where every subpath export imports', () => {
    execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: root, stdio: 'pipe' });
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
    expect(tarball).toMatch(/^kubevirt-ts-\d+\.\d+\.\d+\.tgz$/);

    const app = join(work, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    execFileSync(
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', '--omit=dev', join(work, tarball!)],
      { cwd: app, stdio: 'pipe', timeout: 300_000 },
    );
    writeFileSync(
      join(app, 'check.mjs'),
      [
        "import { kinds, loadManifests } from 'kubevirt-ts/api';",
        "import * as converter from 'kubevirt-ts/converter';",
        "import * as drivers from 'kubevirt-ts/drivers';",
        "import * as controllers from 'kubevirt-ts/controllers';",
        "const r = loadManifests('apiVersion: kubevirt.io/v1\\nkind: VirtualMachineInstance\\nmetadata: {name: a}\\nspec: {domain: {devices: {}}}\\n', { filename: 'x.yaml' });",
        'console.log(JSON.stringify({',
        '  kinds: kinds.length > 5,',
        '  loaded: r.objects.map((o) => o.object.kind),',
        '  converter: typeof converter.convertVMI,',
        '  drivers: Object.keys(drivers).length > 0,',
        '  controllers: Object.keys(controllers).length > 0,',
        '}));',
      ].join('\n'),
    );
    const out = execFileSync(process.execPath, ['check.mjs'], { cwd: app, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({
      kinds: true,
      loaded: ['VirtualMachineInstance'],
      converter: 'function',
      drivers: true,
      controllers: true,
    });
    // The bins are declared and shipped.
    expect(existsSync(join(app, 'node_modules/.bin/kubevirt-ts'))).toBe(true);
    expect(existsSync(join(app, 'node_modules/.bin/virtctl'))).toBe(true);
    // The web console's bundle ships too: `npx kubevirt-ts ui` needs nothing else.
    expect(existsSync(join(app, 'node_modules/kubevirt-ts/dist/ui/app.js'))).toBe(true);
  }, 360_000);
});
