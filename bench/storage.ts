/**
 * `npm run bench:storage`: the DataVolume importer and the reflink pool against their
 * references, in one run, on a temporary loop-mounted XFS pool made by the CSI driver's
 * own pool code (as test/controllers/csi-driver/pool-fixture.ts makes it; needs root,
 * losetup and mkfs.xfs). No cluster.
 *
 * - import: the same 1 GiB qcow2 (incompressible data), served by one loopback HTTP server
 *   (busybox httpd, with Range support), written as a raw disk on the pool twice, best
 *   of three rounds each, alternating which goes first, after one untimed round of each
 *   (busybox httpd serves it), so that neither path always has the run's first write
 *   or always follows the other's:
 *   - `import_mib_s`: the importer's code path (`runImport`, what the importer pod runs:
 *     the probe, the source streamed through nbdkit's curl plugin (busybox httpd advertises
 *     ranges), `qemu-img info`, `qemu-img convert`, fsync, rename);
 *   - `qemu_img_mib_s`: a bare `qemu-img convert -f qcow2 -O raw http://...` (qemu's curl
 *     driver reading the image by ranges) to the pool, then an fsync of the result.
 * - a 1 GiB volume of the pool holding that data (the import's output):
 *   - `clone_1g_ms`: the driver's clone (`Pool.createVolume` with a volume source: a
 *     reflink copy);
 *   - `snapshot_1g_ms`: its snapshot (`Pool.createSnapshot`: a reflink copy);
 *   - `hostpath_style_copy_1g_ms`: what csi-driver-host-path does for a block volume's
 *     clone or snapshot, a full byte copy (`dd bs=4M conv=fsync`) on the same pool.
 *
 * Ends with `BENCH storage import_mib_s= qemu_img_mib_s= clone_1g_ms= snapshot_1g_ms=
 * hostpath_style_copy_1g_ms=`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runImport } from '../src/controllers/cdi-importer';
import { snapshotIdFor, volumeIdFor } from '../src/controllers/csi-driver/ids';
import { Pool } from '../src/controllers/csi-driver/pool';
import { makeTestPool, type TestPool } from '../test/controllers/csi-driver/pool-fixture';
import { freePort } from '../test/support/free-port';

const GiB = 1024 ** 3;
const ROUNDS = 3;

/**
 * The file server: busybox httpd (Range and HEAD, which qemu's curl driver needs). A node
 * http server was tried first: qemu-img's curl driver stalled on it in one of three runs.
 */
async function startServer(dir: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn('busybox', ['httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', dir], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}/disk.qcow2`;
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`busybox httpd exited ${child.exitCode}`);
    const ok = await fetch(url, { method: 'HEAD' }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, url };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`busybox httpd did not answer at ${url}`);
}

async function fsyncFile(p: string): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await f();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/**
 * The reference: a bare `qemu-img convert` of the URL, then an fsync. qemu's curl driver
 * now and then stalls for good on a loopback server (busybox httpd and node's alike; no
 * connection open, no CPU): such a try is killed after 2 minutes, reported, and run again.
 */
async function bareConvert(url: string, out: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    await rm(out, { force: true });
    try {
      return await timed(async () => {
        execFileSync('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', '-t', 'writeback', url, out], {
          timeout: 120_000,
        });
        await fsyncFile(out);
      });
    } catch (err) {
      if (attempt === 3) throw err;
      console.log(`bare qemu-img convert stalled or failed (try ${attempt}): ${(err as Error).message}`);
    }
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('bench:storage needs root (a loop-mounted XFS pool)');
  const work = mkdtempSync(join(tmpdir(), 'kvts-bench-storage-'));
  let pool: TestPool | undefined;
  let server: ChildProcess | undefined;
  try {
    // The source: 1 GiB of incompressible data as qcow2 (every cluster allocated).
    const rawSrc = join(work, 'src.raw');
    const qcow2 = join(work, 'disk.qcow2');
    execFileSync('dd', ['if=/dev/urandom', `of=${rawSrc}`, 'bs=4M', 'count=256', 'status=none']);
    execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', rawSrc, qcow2]);
    rmSync(rawSrc);
    const started = await startServer(work);
    server = started.child;
    const url = started.url;

    pool = await makeTestPool(6 * GiB);
    const p = new Pool(pool.dir);
    await p.init();
    const importDir = join(pool.dir, 'bench-import');
    const scratchDir = join(pool.dir, 'bench-scratch');
    const bareDir = join(pool.dir, 'bench-bare');
    for (const d of [importDir, scratchDir, bareDir]) await mkdir(d, { recursive: true });

    const importMs: number[] = [];
    const bareMs: number[] = [];
    const bare = async () => {
      const bareOut = join(bareDir, 'disk.img');
      await rm(bareOut, { force: true });
      return bareConvert(url, bareOut);
    };
    const ours = async () => {
      await rm(join(importDir, 'disk.img'), { force: true });
      return timed(() =>
        runImport(
          {
            source: 'http',
            endpoint: url,
            contentType: 'kubevirt',
            extraHeaders: [],
            volumeMode: 'Filesystem',
            filesystemOverhead: 0,
          },
          { dataDir: importDir, scratchDir, blockDevice: '/nonexistent' },
          (l) => {
            if (l.startsWith('streaming')) streamed = l;
          },
        ),
      );
    };
    /** How the importer read the source (its log line). */
    let streamed = 'not streamed';
    const warm = [await bare(), await ours()];
    process.stdout.write(`import path: ${streamed}\n`);
    process.stdout.write(
      `warm-up (not counted): bare qemu-img ${Math.round(warm[0])} ms, import ${Math.round(warm[1])} ms\n`,
    );
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        bareMs.push(await bare());
        importMs.push(await ours());
      } else {
        importMs.push(await ours());
        bareMs.push(await bare());
      }
    }
    await rm(join(bareDir, 'disk.img'), { force: true });
    const mibS = (ms: number[]) => (1024 / (Math.min(...ms) / 1000)).toFixed(0);

    // A 1 GiB pool volume holding the imported bytes (moved in: no copy).
    const src = volumeIdFor('bench-src');
    await p.createVolume(src, { name: 'bench-src', capacityBytes: GiB, parameters: {} });
    await rename(join(importDir, 'disk.img'), p.diskPath(src));
    const clone = await timed(() =>
      p.createVolume(volumeIdFor('bench-clone'), {
        name: 'bench-clone',
        capacityBytes: GiB,
        parameters: {},
        source: { volumeId: src },
      }),
    );
    const snapshot = await timed(() => p.createSnapshot(snapshotIdFor('bench-snap'), 'bench-snap', src));
    const copyOut = join(pool.dir, 'bench-copy');
    const copy = await timed(async () => {
      execFileSync('dd', [`if=${p.diskPath(src)}`, `of=${copyOut}`, 'bs=4M', 'conv=fsync', 'status=none']);
    });

    console.log(
      `load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(
      `import ms ${importMs.map((m) => m.toFixed(0)).join(',')}; bare qemu-img ms ${bareMs.map((m) => m.toFixed(0)).join(',')}`,
    );
    console.log(
      `BENCH storage import_mib_s=${mibS(importMs)} qemu_img_mib_s=${mibS(bareMs)} clone_1g_ms=${clone.toFixed(1)} snapshot_1g_ms=${snapshot.toFixed(1)} hostpath_style_copy_1g_ms=${copy.toFixed(0)}`,
    );
  } finally {
    server?.kill();
    if (pool) {
      // Gigabytes written through the loop device: removed and flushed before the unmount,
      // so the loop device clears within the leftover check's wait even on a busy host.
      for (const e of ['bench-import', 'bench-scratch', 'bench-bare', 'bench-copy', 'volumes', 'snapshots'])
        await rm(join(pool.dir, e), { recursive: true, force: true });
      execFileSync('sync', ['-f', pool.dir]);
    }
    await pool?.cleanup();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
