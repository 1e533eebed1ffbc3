/**
 * The CSI driver's pool on a real loop-mounted XFS with reflink: volumes are sparse
 * files, snapshots and clones are reflink copies that take no space (the pool's free
 * space, as statfs and df report it, does not shrink by the copied data), expansion
 * grows the file, deletion leaves nothing, and hostile IDs never reach a path.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotIdFor, volumeIdFor } from '../../../src/controllers/csi-driver/ids';
import { Pool, PoolError } from '../../../src/controllers/csi-driver/pool';
import { makeTestPool, poolTestsEnabled, type TestPool } from './pool-fixture';

const MiB = 1024 * 1024;
const enabled = poolTestsEnabled('CSI pool on loop-mounted XFS');

/** The pool's free bytes as df reports them (a second opinion beside statfs). */
function dfAvailable(dir: string): number {
  const out = execFileSync('df', ['--output=avail', '-B1', dir], { encoding: 'utf8' });
  return Number(out.trim().split('\n')[1]);
}

describe.runIf(enabled)('CSI pool (root, real XFS with reflink)', () => {
  let tp: TestPool;
  let pool: Pool;
  beforeAll(async () => {
    tp = await makeTestPool(2 * 1024 ** 3);
    pool = new Pool(tp.dir);
    await pool.init();
  });
  afterAll(async () => {
    await tp?.cleanup();
  });

  const data = randomBytes(64 * MiB);
  const vol = volumeIdFor('pvc-source');

  it('creates a sparse volume of the asked size and reports the pool capacity as statfs and df do', async () => {
    const before = await pool.space();
    expect(Math.abs(before.availableBytes - dfAvailable(tp.dir))).toBeLessThan(MiB);
    expect(before.totalBytes).toBeGreaterThan(1.9 * 1024 ** 3);
    const rec = await pool.createVolume(vol, {
      name: 'pvc-source',
      capacityBytes: 512 * MiB,
      parameters: {},
    });
    expect(rec.capacityBytes).toBe(512 * MiB);
    expect((await pool.getVolume(vol))?.capacityBytes).toBe(512 * MiB);
    // Sparse: 512 MiB asked, next to nothing taken.
    expect(before.availableBytes - (await pool.space()).availableBytes).toBeLessThan(MiB);
    const fh = await open(pool.diskPath(vol), 'r+');
    await fh.write(data, 0, data.length, 0);
    await fh.sync();
    await fh.close();
    const after = await pool.space();
    expect(before.availableBytes - after.availableBytes).toBeGreaterThanOrEqual(64 * MiB);
  });

  it('snapshots by reflink: the data is there and df does not grow', async () => {
    const before = dfAvailable(tp.dir);
    const snap = snapshotIdFor('snap-1');
    const t0 = performance.now();
    const rec = await pool.createSnapshot(snap, 'snap-1', vol);
    const ms = performance.now() - t0;
    console.log(`snapshot of a 512 MiB volume (64 MiB written) took ${ms.toFixed(1)} ms`);
    expect(rec.sizeBytes).toBe(512 * MiB);
    expect(rec.sourceVolumeId).toBe(vol);
    const copy = await readFile(join(tp.dir, 'snapshots', snap, 'disk'));
    expect(copy.subarray(0, data.length).equals(data)).toBe(true);
    // 64 MiB of data copied, well under 1 MiB more used: the blocks are shared.
    expect(before - dfAvailable(tp.dir)).toBeLessThan(MiB);
  });

  it('clones a volume and restores a snapshot by reflink, bigger when asked, with no space taken', async () => {
    const before = dfAvailable(tp.dir);
    const clone = volumeIdFor('pvc-clone');
    await pool.createVolume(clone, {
      name: 'pvc-clone',
      capacityBytes: 768 * MiB,
      parameters: {},
      source: { volumeId: vol },
    });
    const restored = volumeIdFor('pvc-restored');
    await pool.createVolume(restored, {
      name: 'pvc-restored',
      capacityBytes: 512 * MiB,
      parameters: {},
      source: { snapshotId: snapshotIdFor('snap-1') },
    });
    expect((await pool.getVolume(clone))?.capacityBytes).toBe(768 * MiB);
    for (const id of [clone, restored]) {
      const head = (await readFile(pool.diskPath(id))).subarray(0, data.length);
      expect(head.equals(data)).toBe(true);
    }
    expect(before - dfAvailable(tp.dir)).toBeLessThan(MiB);
    // A clone smaller than its source is refused, and leaves nothing behind.
    await expect(
      pool.createVolume(volumeIdFor('pvc-small'), {
        name: 'pvc-small',
        capacityBytes: 256 * MiB,
        parameters: {},
        source: { volumeId: vol },
      }),
    ).rejects.toMatchObject({ reason: 'too-small' });
    expect(await pool.getVolume(volumeIdFor('pvc-small'))).toBeUndefined();
    expect(await readdir(join(tp.dir, 'tmp'))).toEqual([]);
  });

  it('refuses a volume bigger than the free space and leaves nothing behind', async () => {
    const id = volumeIdFor('pvc-huge');
    await expect(
      pool.createVolume(id, { name: 'pvc-huge', capacityBytes: 8 * 1024 ** 3, parameters: {} }),
    ).rejects.toBeInstanceOf(PoolError);
    expect(await pool.getVolume(id)).toBeUndefined();
    expect(await readdir(join(tp.dir, 'tmp'))).toEqual([]);
  });

  it('leaves nothing behind when a CreateVolume fails halfway (the copy fails)', async () => {
    const snap = snapshotIdFor('snap-broken');
    await pool.createSnapshot(snap, 'snap-broken', vol);
    // Sabotage: the snapshot's disk becomes a directory, so the reflink copy fails midway.
    const disk = join(tp.dir, 'snapshots', snap, 'disk');
    await rm(disk);
    await mkdir(disk);
    const id = volumeIdFor('pvc-from-broken');
    await expect(
      pool.createVolume(id, {
        name: 'pvc-from-broken',
        capacityBytes: 512 * MiB,
        parameters: {},
        source: { snapshotId: snap },
      }),
    ).rejects.toThrow(/cp /);
    expect(await pool.getVolume(id)).toBeUndefined();
    expect(await readdir(join(tp.dir, 'volumes'))).not.toContain(id);
    expect(await readdir(join(tp.dir, 'tmp'))).toEqual([]);
    await rm(join(tp.dir, 'snapshots', snap), { recursive: true });
  });

  it('expands a volume (never shrinks) and keeps its data', async () => {
    expect(await pool.expandVolume(vol, 1024 * MiB)).toBe(1024 * MiB);
    expect(await pool.expandVolume(vol, 100 * MiB)).toBe(1024 * MiB);
    expect((await pool.getVolume(vol))?.capacityBytes).toBe(1024 * MiB);
    const head = (await readFile(pool.diskPath(vol))).subarray(0, data.length);
    expect(head.equals(data)).toBe(true);
  });

  it('deletes volumes and snapshots; the clones keep their data when the source goes', async () => {
    const notInUse = async () => false;
    expect(await pool.deleteVolume(vol, notInUse)).toBe(true);
    expect(await pool.deleteVolume(vol, notInUse)).toBe(false);
    const clone = volumeIdFor('pvc-clone');
    expect((await readFile(pool.diskPath(clone))).subarray(0, data.length).equals(data)).toBe(true);
    expect(await pool.deleteSnapshot(snapshotIdFor('snap-1'))).toBe(true);
    expect(await pool.deleteSnapshot(snapshotIdFor('snap-1'))).toBe(false);
    await expect(pool.deleteVolume(clone, async () => true)).rejects.toMatchObject({ reason: 'in-use' });
    expect(await pool.deleteVolume(clone, notInUse)).toBe(true);
    expect(await pool.deleteVolume(volumeIdFor('pvc-restored'), notInUse)).toBe(true);
    expect(await pool.listVolumes()).toEqual([]);
    expect(await pool.listSnapshots()).toEqual([]);
    expect(await readdir(join(tp.dir, 'tmp'))).toEqual([]);
  });

  it('treats hostile IDs as absent and never builds a path from them', async () => {
    // A file the hostile IDs aim at, outside the pool's volumes.
    const hostile = [
      '..',
      '../..',
      '../snapshots',
      'v-../../etc',
      '/etc/passwd',
      'v-' + 'a'.repeat(31) + '/',
      '',
    ];
    for (const id of hostile) {
      expect(await pool.getVolume(id)).toBeUndefined();
      expect(await pool.getSnapshot(id)).toBeUndefined();
      expect(await pool.deleteVolume(id, async () => false)).toBe(false);
      expect(await pool.deleteSnapshot(id)).toBe(false);
      expect(() => pool.diskPath(id)).toThrow(PoolError);
      await expect(pool.createVolume(id, { name: 'x', capacityBytes: MiB, parameters: {} })).rejects.toThrow(
        /not a volume ID/,
      );
      await expect(pool.createSnapshot(id, 'x', volumeIdFor('pvc-clone'))).rejects.toThrow(
        /not a snapshot ID/,
      );
    }
    expect(await readdir(tp.dir)).toEqual(expect.arrayContaining(['volumes', 'snapshots', 'tmp']));
  });
});
