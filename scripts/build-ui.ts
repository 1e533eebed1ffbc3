/**
 * Bundles the web console (src/ui-web) for the browser into `dist/ui`: `app.js` (the list,
 * the VM page, the form) and lazily loaded chunks (xterm.js for the serial console, noVNC
 * for VNC), plus `app.css`. `npm run build` runs it after tsup; tests call {@link buildUi}
 * into a directory of their own.
 */
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Builds the bundle into `outDir` (emptied first); returns the output files' sizes. */
export async function buildUi(outDir = join(root, 'dist', 'ui')): Promise<Record<string, number>> {
  rmSync(outDir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { app: join(root, 'src', 'ui-web', 'main.ts') },
    outdir: outDir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    // noVNC uses top-level await; every browser the console supports has it.
    target: ['es2022', 'chrome100', 'firefox100', 'safari16'],
    minify: true,
    sourcemap: false,
    metafile: true,
    chunkNames: 'chunk-[hash]',
    legalComments: 'none',
    logLevel: 'warning',
  });
  const sizes: Record<string, number> = {};
  for (const [file, out] of Object.entries(result.metafile.outputs))
    sizes[file.split('/').pop() as string] = out.bytes;
  return sizes;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const sizes = await buildUi(process.argv[2]);
  const total = Object.values(sizes).reduce((a, b) => a + b, 0);
  process.stdout.write(
    `web console bundle: ${Object.keys(sizes).length} files, ${(total / 1024).toFixed(0)} KiB\n`,
  );
}
