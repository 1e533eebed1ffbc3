/** What the importer's tests share: the source disk, a target's directories, an http request. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ImportPaths, ImportRequest } from '../../../src/controllers/cdi-importer';

/**
 * `raw` (by default 4 MiB with a recognisable line at each MiB) written as `src.raw` in
 * `dir`, and the same converted to qcow2 (`src.qcow2`).
 */
export function sourceDisks(
  dir: string,
  raw: Buffer = stampedRaw(4, 'block at'),
): { raw: Buffer; qcow2: Buffer } {
  writeFileSync(join(dir, 'src.raw'), raw);
  execFileSync('qemu-img', [
    'convert',
    '-f',
    'raw',
    '-O',
    'qcow2',
    join(dir, 'src.raw'),
    join(dir, 'src.qcow2'),
  ]);
  return { raw, qcow2: readFileSync(join(dir, 'src.qcow2')) };
}

/** `mib` MiB of zeros with `<label> <offset>` written at each MiB. */
export function stampedRaw(mib: number, label: string): Buffer {
  const raw = Buffer.alloc(mib << 20);
  for (let off = 0; off < raw.length; off += 1 << 20) raw.write(`${label} ${off}`, off);
  return raw;
}

/** A Filesystem target's data and scratch directories under `dir`, made. */
export function importTarget(dir: string, name: string): ImportPaths {
  const t = {
    dataDir: join(dir, `${name}-data`),
    scratchDir: join(dir, `${name}-scratch`),
    blockDevice: '/nonexistent',
  };
  mkdirSync(t.dataDir, { recursive: true });
  mkdirSync(t.scratchDir, { recursive: true });
  return t;
}

/** An http import request to a Filesystem volume, with `over`. */
export const httpImport = (over: Partial<ImportRequest>): ImportRequest => ({
  source: 'http',
  contentType: 'kubevirt',
  extraHeaders: [],
  volumeMode: 'Filesystem',
  filesystemOverhead: 0,
  ...over,
});
