/**
 * The disk-image steps of an import: find out what was downloaded (compression by its
 * magic bytes, format and virtual size by `qemu-img info`), decompress it, and write it as
 * raw to the target with `qemu-img convert`.
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { runTool } from '../common/run-tool';

/** Image formats the importer converts (qemu-img's names). */
export const ACCEPTED_FORMATS = ['raw', 'qcow2', 'vmdk', 'vhdx', 'vpc'] as const;

/** gzip or xz by a source's first bytes (up to 6), else none. */
export function compressionOfHead(b: Buffer): 'gz' | 'xz' | undefined {
  if (b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b) return 'gz';
  if (b.length >= 6 && b.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])))
    return 'xz';
  return undefined;
}

/** gzip or xz by the file's first bytes, else none. */
export async function compressionOf(file: string): Promise<'gz' | 'xz' | undefined> {
  const fh = await open(file, 'r');
  try {
    const b = Buffer.alloc(6);
    const { bytesRead } = await fh.read(b, 0, 6, 0);
    return compressionOfHead(b.subarray(0, bytesRead));
  } finally {
    await fh.close();
  }
}

/** Decompresses `from` into `to` (gzip in-process, xz with the `xz` tool). */
export async function decompress(kind: 'gz' | 'xz', from: string, to: string): Promise<void> {
  if (kind === 'gz') {
    await pipeline(createReadStream(from), createGunzip(), createWriteStream(to));
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const child = spawn('xz', ['-dc', '--', from], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', (e) => reject(new Error(`xz: ${e.message}`)));
    pipeline(child.stdout, createWriteStream(to)).catch(reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`xz -dc: ${stderr.trim()}`))));
  });
}

export interface ImageInfo {
  format: string;
  virtualSize: number;
  backingFile?: string;
}

/** `qemu-img info` of a local file. */
export async function imageInfo(file: string): Promise<ImageInfo> {
  const out = JSON.parse(await runTool('qemu-img', ['info', '--output=json', '--', file])) as {
    format: string;
    'virtual-size': number;
    'backing-filename'?: string;
  };
  return { format: out.format, virtualSize: out['virtual-size'], backingFile: out['backing-filename'] };
}

/** Refuses what the importer must not write: unknown formats and images with a backing file. */
export function imageProblem(info: ImageInfo): string | undefined {
  if (!(ACCEPTED_FORMATS as readonly string[]).includes(info.format))
    return `image format ${info.format} is not one of ${ACCEPTED_FORMATS.join(', ')}`;
  if (info.backingFile) return `the image has a backing file (${info.backingFile}): refused`;
  return undefined;
}

/**
 * Converts `src` (of `format`) to raw at `target`. `existingTarget` (a block device) is
 * written in place (`-n`), else the file is created.
 */
export async function convertToRaw(
  src: string,
  format: string,
  target: string,
  existingTarget: boolean,
): Promise<void> {
  const args = ['convert', '-f', format, '-O', 'raw', '-t', 'writeback', ...(existingTarget ? ['-n'] : [])];
  await runTool('qemu-img', [...args, '--', src, target]);
}
