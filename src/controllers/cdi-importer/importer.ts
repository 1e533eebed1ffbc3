/**
 * One import (CDI's importer, `kubevirt-ts cdi-importer`): fetch the source into scratch
 * space (or take the registry image's disk an init container put there), verify its checksum, decompress, check format and size, and write it as raw to
 * the target: `disk.img` on a filesystem volume, the device itself on a block volume.
 *
 * A filesystem target is written as `disk.img.tmp` and renamed into place only when it is
 * complete and synced; a restarted import first removes what an earlier run left, so
 * `disk.img` is either absent or whole. A block device has no rename: it is written in
 * place, and only the pod's success (which the DataVolume waits for) says it is whole.
 */
import { constants } from 'node:fs';
import { open, rename, rm, stat, statfs, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { DISK_IMAGE, type ImportRequest, REGISTRY_IMAGE_FILE } from '../common/cdi-import-request';
import { UPLOAD_IMAGE_FILE } from '../common/cdi-upload';
import { runTool } from '../common/run-tool';
import {
  compressionOf,
  compressionOfHead,
  convertToRaw,
  decompress,
  imageInfo,
  imageProblem,
} from './disk-image';
import { download } from './http-download';
import { openRangeSource } from './http-ranges';
import { startNbdExport } from './nbd-export';
import { advertisesRanges, nbdkitCurlAvailable, startNbdkitCurl } from './nbdkit-curl';
import { makeSocketDir } from './socket-dir';

/** Where the importer reads and writes. */
export interface ImportPaths {
  /** Filesystem volumes: the volume's mount point. */
  dataDir: string;
  /** Block volumes: the device. */
  blockDevice: string;
  /** Space for the download (an emptyDir). */
  scratchDir: string;
}

export interface ImportOutcome {
  /** Bytes of the disk written (its virtual size). */
  diskBytes: number;
  format?: string;
}

const SECTOR = 512;

/** An import error no retry can fix: the DataVolume goes to Failed. */
export class FatalImportError extends Error {}

async function fsyncPath(p: string, flags = constants.O_RDONLY): Promise<void> {
  const fh = await open(p, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Bytes of a filesystem volume a disk may take: its size less the filesystem overhead. */
export async function usableFilesystemBytes(dir: string, overhead: number): Promise<number> {
  const s = await statfs(dir);
  const total = s.blocks * s.bsize;
  return Math.floor((total * (1 - overhead)) / SECTOR) * SECTOR;
}

async function blockDeviceBytes(dev: string): Promise<number> {
  return Number((await runTool('blockdev', ['--getsize64', dev])).trim());
}

/** Where qemu-img reads the source, and what to undo after. */
interface FetchedSource {
  /** A local file in scratch, or the NBD export's URI. */
  image: string;
  done(): Promise<void>;
}

/**
 * An http source without a checksum whose server answers ranges, and which is not
 * compressed, is streamed: qemu-img reads it through a local NBD export of the URL and
 * converts as it arrives (one pass, no scratch copy), as CDI's importer does. The export is
 * nbdkit's curl plugin where it can serve the URL (nbdkit-curl.ts), else node's own. A
 * checksum needs every byte in order, compression a decompressor; without ranges the
 * server can only be read whole: those are downloaded first.
 */
async function streamedSource(req: ImportRequest, log: (line: string) => void) {
  if (req.source !== 'http' || req.checksum) return undefined;
  const http = {
    url: req.endpoint!,
    basicAuth: req.basicAuth,
    extraHeaders: req.extraHeaders,
    certDir: req.certDir,
  };
  const source = await openRangeSource(http);
  if (!source) return undefined;
  if (compressionOfHead(source.head)) {
    source.close();
    return undefined;
  }
  if (nbdkitCurlAvailable() && (await advertisesRanges(http))) {
    source.close();
    const kit = await startNbdkitCurl(http);
    log(`streaming ${source.size} bytes from ${req.endpoint} through nbdkit`);
    return { image: kit.uri, readError: kit.readError, done: kit.close };
  }
  const sockets = await makeSocketDir();
  const nbd = await startNbdExport(join(sockets.dir, 'source.nbd'), source).catch(async (err) => {
    source.close();
    await sockets.remove();
    throw err;
  });
  log(`streaming ${source.size} bytes from ${req.endpoint} by ranges`);
  return {
    image: nbd.uri,
    readError: nbd.readError,
    done: async () => {
      await nbd.close();
      source.close();
      await sockets.remove();
    },
  };
}

/**
 * The source where qemu-img reads it: streamed (above), or a local file in scratch,
 * decompressed: downloaded (http, its checksum checked) or the copy the registry init
 * container left.
 */
async function fetchSource(
  req: ImportRequest,
  scratchDir: string,
  log: (line: string) => void,
): Promise<FetchedSource> {
  let source: string;
  if (req.source === 'registry' || req.source === 'upload') {
    const upload = req.source === 'upload';
    source = join(scratchDir, upload ? UPLOAD_IMAGE_FILE : REGISTRY_IMAGE_FILE);
    const st = await stat(source).catch(() => undefined);
    if (!st?.isFile())
      throw new Error(
        upload
          ? `the uploaded image is not at ${source}`
          : `the registry image's disk was not copied to ${source} (the init container's job)`,
      );
    log(
      upload ? `the uploaded image is ${st.size} bytes` : `the disk of ${req.endpoint} is ${st.size} bytes`,
    );
  } else {
    source = join(scratchDir, 'source');
    await rm(source, { force: true });
    let lastPct = -10;
    const got = await download(
      {
        url: req.endpoint!,
        basicAuth: req.basicAuth,
        extraHeaders: req.extraHeaders,
        certDir: req.certDir,
        hashAlgorithm: req.checksum?.algorithm,
        onProgress: (done, total) => {
          const pct = total ? Math.floor((100 * done) / total) : -1;
          if (pct >= lastPct + 10) {
            lastPct = pct;
            log(`downloaded ${done} of ${total} bytes`);
          }
        },
      },
      source,
    );
    log(`downloaded ${got.bytes} bytes from ${req.endpoint}`);
    if (req.checksum && got.digest !== req.checksum.hex)
      throw new FatalImportError(
        `checksum mismatch: the source's ${req.checksum.algorithm} is ${got.digest}, the DataVolume's checksum says ${req.checksum.hex}`,
      );
  }
  const compression = await compressionOf(source);
  let image = source;
  if (compression) {
    image = join(scratchDir, 'source.dec');
    await decompress(compression, source, image);
    await rm(source, { force: true });
  }
  return { image, done: () => rm(image, { force: true }) };
}

/** Runs one import; errors say what went wrong in words for the DataVolume's condition. */
export async function runImport(
  req: ImportRequest,
  paths: ImportPaths,
  log: (line: string) => void = () => {},
): Promise<ImportOutcome> {
  const block = req.volumeMode === 'Block';
  const finalPath = join(paths.dataDir, DISK_IMAGE);
  const tmpPath = `${finalPath}.tmp`;
  if (!block) {
    // A restarted import starts from a clean target.
    await rm(tmpPath, { force: true });
    await rm(finalPath, { force: true });
  }
  const capacity = block
    ? await blockDeviceBytes(paths.blockDevice)
    : await usableFilesystemBytes(paths.dataDir, req.filesystemOverhead);
  const wanted = Math.min(req.imageSizeBytes ?? capacity, capacity);

  if (req.source === 'blank') {
    if (!block) {
      const fh = await open(tmpPath, 'w');
      await fh.close();
      await truncate(tmpPath, Math.floor(wanted / SECTOR) * SECTOR);
      await fsyncPath(tmpPath);
      await rename(tmpPath, finalPath);
      await fsyncPath(paths.dataDir);
    }
    log(`blank disk of ${wanted} bytes`);
    return { diskBytes: wanted };
  }

  const streamed = await streamedSource(req, log);
  const fetched = streamed ?? (await fetchSource(req, paths.scratchDir, log));
  const image = fetched.image;
  let info: Awaited<ReturnType<typeof imageInfo>>;
  try {
    try {
      info = await imageInfo(image);
      const problem = imageProblem(info);
      if (problem) throw new FatalImportError(problem);
      if (info.virtualSize > capacity)
        throw new FatalImportError(
          `the image's virtual size ${info.virtualSize} bytes is larger than the ${capacity} bytes the volume can hold`,
        );
      if (block) {
        await convertToRaw(image, info.format, paths.blockDevice, true);
        await fsyncPath(paths.blockDevice, constants.O_RDWR);
      } else {
        await convertToRaw(image, info.format, tmpPath, false);
        // Grown (sparse) to the size the DataVolume asked for, as CDI resizes the disk.
        if (req.imageSizeBytes !== undefined && wanted > info.virtualSize)
          await truncate(tmpPath, Math.floor(wanted / SECTOR) * SECTOR);
        await fsyncPath(tmpPath);
        await rename(tmpPath, finalPath);
        await fsyncPath(paths.dataDir);
      }
    } catch (err) {
      // Nothing half-written stays on the volume (a retry would remove it anyway).
      if (!block) await rm(tmpPath, { force: true });
      // qemu-img saw an I/O error where the HTTP read failed: say what failed.
      const readError = streamed?.readError();
      if (readError && !(err instanceof FatalImportError))
        throw new Error(`reading ${req.endpoint}: ${readError.message}`);
      throw err;
    }
  } finally {
    await fetched.done();
  }
  log(`wrote ${info.format} image (${info.virtualSize} bytes virtual) as raw`);
  const grown = !block && req.imageSizeBytes !== undefined ? wanted : 0;
  return { diskBytes: Math.max(info.virtualSize, grown), format: info.format };
}
