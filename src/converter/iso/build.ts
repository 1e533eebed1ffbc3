/**
 * Builds ISO 9660 images (Rock Ridge + Joliet) with Debian's xorriso, the way upstream
 * builds cloud-init and config disks with genisoimage. This module does IO: the launcher
 * calls it to create the files whose paths the pure converter put in the domain.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { IsoContents } from './contents';

const run = promisify(execFile);
const LABEL = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const SEGMENT = /^[A-Za-z0-9._-]+$/;

/** Options of {@link buildIso}. */
export interface BuildIsoOptions {
  /** The xorriso binary (default `xorriso` from PATH). */
  xorriso?: string;
}

/**
 * Writes `contents` as an ISO image at `output` (absolute path; created atomically via a
 * temporary file in the same directory). Rejects labels and file names that are not
 * plain, so nothing user-controlled can become an option or escape the staging directory.
 */
export async function buildIso(
  contents: IsoContents,
  output: string,
  options: BuildIsoOptions = {},
): Promise<void> {
  if (!LABEL.test(contents.label))
    throw new Error(
      `ISO label '${contents.label}' must be 1 to 32 letters, digits, "_" or "-", starting with a letter or digit`,
    );
  if (!path.isAbsolute(output) || output.split('/').includes('..'))
    throw new Error(`ISO output '${output}' must be an absolute path without '..'`);
  const staging = await mkdtemp(path.join(tmpdir(), 'kvts-iso-'));
  try {
    for (const [rel, data] of Object.entries(contents.files)) {
      const parts = rel.split('/');
      if (parts.some((p) => !SEGMENT.test(p) || p === '.' || p === '..'))
        throw new Error(`ISO file name '${rel}' is not a plain relative path`);
      const file = path.join(staging, ...parts);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, data);
    }
    await mkdir(path.dirname(output), { recursive: true });
    const tmp = `${output}.tmp-${process.pid}`;
    await rm(tmp, { force: true });
    await run(options.xorriso ?? 'xorriso', [
      '-as',
      'mkisofs',
      '-output',
      tmp,
      '-volid',
      contents.label,
      '-joliet',
      '-rock',
      '-quiet',
      staging,
    ]);
    await rename(tmp, output);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
