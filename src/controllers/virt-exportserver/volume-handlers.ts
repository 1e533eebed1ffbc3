/**
 * How the export server serves one volume (upstream's virt-exportserver handlers): the
 * disk image raw (`disk.img`, with Content-Length and byte ranges) or gzip-compressed while
 * it is read (`disk.img.gz`), and a filesystem volume's files as one gzip'd tar
 * (`disk.tar.gz`, `lost+found` left out) or one by one under `dir/`.
 */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, relative, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

/** A request handler; `rest` is the path after the handler's URI (dir handler only). */
export type VolumeHandler = (req: IncomingMessage, res: ServerResponse, rest: string) => Promise<void>;

/** The size of a regular file or a block device (stat gives 0 for devices). */
async function sizeOf(file: string): Promise<number> {
  const st = await stat(file);
  if (st.isFile()) return st.size;
  const fh = await open(file, 'r');
  try {
    // A block device: its size is where a read at the end stops.
    let lo = 0;
    let hi = 1;
    const b = Buffer.alloc(1);
    while ((await fh.read(b, 0, 1, hi - 1)).bytesRead === 1) {
      lo = hi;
      hi *= 2;
    }
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if ((await fh.read(b, 0, 1, mid - 1)).bytesRead === 1) lo = mid;
      else hi = mid;
    }
    return lo;
  } finally {
    await fh.close();
  }
}

/** One `bytes=a-b` range of `size`, or undefined for none or a form not handled (the whole file). */
function byteRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'bad' | undefined {
  const m = header?.match(/^bytes=(\d*)-(\d*)$/);
  if (!m) return undefined;
  const [a, b] = [m[1] ?? '', m[2] ?? ''];
  if (a === '' && b === '') return 'bad';
  const start = a === '' ? Math.max(0, size - Number(b)) : Number(a);
  const end = a === '' || b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (start > end || start >= size) return 'bad';
  return { start, end };
}

/** Serves `file` raw. */
export function rawHandler(file: string): VolumeHandler {
  return async (req, res) => {
    const size = await sizeOf(file);
    const range = byteRange(req.headers.range, size);
    if (range === 'bad') {
      res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      return;
    }
    const [start, end] = range ? [range.start, range.end] : [0, size - 1];
    res.writeHead(range ? 206 : 200, {
      'content-type': 'application/octet-stream',
      'content-length': String(end - start + 1),
      'accept-ranges': 'bytes',
      ...(range ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
    });
    if (size === 0) {
      res.end();
      return;
    }
    await pipeline(createReadStream(file, { start, end }), res);
  };
}

/** Serves `file` gzip-compressed as it is read. */
export function gzipHandler(file: string): VolumeHandler {
  return async (_req, res) => {
    await stat(file);
    res.writeHead(200, { 'content-type': 'application/gzip' });
    // Level 1: the link is the bottleneck less often than the CPU compressing (2 cores here).
    await pipeline(createReadStream(file), createGzip({ level: 1 }), res);
  };
}

/** Serves the directory `dir` as a gzip'd tar (GNU tar, sparse-aware, `lost+found` excluded). */
export function archiveHandler(dir: string): VolumeHandler {
  return async (_req, res) => {
    const tar = spawn('tar', ['-Sc', '--exclude=./lost+found', '-C', dir, '.'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    tar.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number>((resolve) => tar.on('close', (code) => resolve(code ?? 1)));
    res.writeHead(200, { 'content-type': 'application/gzip' });
    await pipeline(tar.stdout, createGzip({ level: 1 }), res);
    const code = await exited;
    // The status is sent already: a failed tar cuts the stream short, which the client sees.
    if (code !== 0) throw new Error(`tar of ${dir} exited ${code}: ${stderr.trim()}`);
  };
}

/**
 * Serves the files under `dir` (`rest` is the path below the handler's URI): a file's
 * bytes, a directory's entries one a line (subdirectories with a trailing `/`). A path
 * resolving outside `dir` (`..`, a symbolic link leading out) is 404, as a missing one.
 */
export function dirHandler(dir: string): VolumeHandler {
  return async (_req, res, rest) => {
    let target: string;
    let root: string;
    try {
      root = await realpath(dir);
      target = await realpath(join(root, decodeURIComponent(rest)));
      const rel = relative(root, target);
      if (rel.startsWith(`..${sep}`) || rel === '..' || rel.startsWith(sep)) throw new Error('outside');
    } catch {
      res.writeHead(404).end();
      return;
    }
    const st = await stat(target);
    if (st.isDirectory()) {
      const entries = await readdir(target, { withFileTypes: true });
      const lines = entries
        .filter((e) => !(target === root && e.name === 'lost+found'))
        .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
        .sort();
      res
        .writeHead(200, { 'content-type': 'text/plain; charset=utf-8' })
        .end(lines.map((l) => `${l}\n`).join(''));
      return;
    }
    if (!st.isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(st.size) });
    await pipeline(createReadStream(target), res);
  };
}
