/**
 * The storage pool's contents: volumes and snapshots, each a directory holding `disk` (a
 * sparse raw file, the volume's bytes) and `meta.json` (the CO's name and what it asked
 * for). Layout under the pool directory:
 *
 *   volumes/<volume id>/{disk,meta.json}
 *   snapshots/<snapshot id>/{disk,meta.json}
 *   tmp/                 half-made and half-deleted entries (emptied at start)
 *
 * A volume or snapshot appears under its ID only by a rename of a finished directory from
 * tmp/, and leaves by a rename into tmp/ before it is removed: a crash halfway leaves
 * nothing under volumes/ or snapshots/. Snapshots and clones are `cp --reflink=always` of
 * the source's disk (copy-on-write, instant and space-free on the pool's XFS).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import {
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  statfs,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { runTool } from '../common/run-tool';
import { isSnapshotId, isVolumeId } from './ids';
import { KeyedLock } from './keyed-lock';

/** What a volume was made from. */
export interface VolumeSource {
  snapshotId?: string;
  volumeId?: string;
}

/** A volume's record (meta.json) with its current size. */
export interface VolumeRecord {
  id: string;
  name: string;
  capacityBytes: number;
  parameters: Record<string, string>;
  source?: VolumeSource;
  createdAt: string;
}

/** A snapshot's record. */
export interface SnapshotRecord {
  id: string;
  name: string;
  sourceVolumeId: string;
  sizeBytes: number;
  createdAt: string;
}

/** The pool's space, from statfs. */
export interface PoolSpace {
  totalBytes: number;
  availableBytes: number;
}

/** Why a pool operation refused (the controller maps each to its CSI status). */
export class PoolError extends Error {
  constructor(
    readonly reason: 'not-found' | 'no-space' | 'too-small' | 'in-use',
    message: string,
  ) {
    super(message);
    this.name = 'PoolError';
  }
}

/** Volumes and snapshots in a pool directory (already mounted: pool-filesystem.ts). */
export class Pool {
  /** Serialises work on one volume or snapshot ID; the node service uses it too. */
  readonly locks = new KeyedLock();

  constructor(readonly dir: string) {}

  /** Creates the layout and clears tmp/ of a previous run's leftovers. */
  async init(): Promise<void> {
    await rm(join(this.dir, 'tmp'), { recursive: true, force: true });
    for (const d of ['volumes', 'snapshots', 'tmp'])
      await mkdir(join(this.dir, d), { recursive: true, mode: 0o700 });
  }

  /** The pool's total and free bytes. */
  async space(): Promise<PoolSpace> {
    const s = await statfs(this.dir);
    return { totalBytes: s.blocks * s.bsize, availableBytes: s.bavail * s.bsize };
  }

  /** The file holding a volume's bytes (`id` must be a volume ID: checked). */
  diskPath(id: string): string {
    if (!isVolumeId(id)) throw new PoolError('not-found', `volume ${JSON.stringify(id)} is not a volume ID`);
    return join(this.dir, 'volumes', id, 'disk');
  }

  /** A volume, or undefined (also for IDs of any other shape). */
  async getVolume(id: string): Promise<VolumeRecord | undefined> {
    if (!isVolumeId(id)) return undefined;
    return this.readRecord<VolumeRecord>(join(this.dir, 'volumes', id), (r, size) => ({
      ...r,
      capacityBytes: size,
    }));
  }

  /** A snapshot, or undefined. */
  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    if (!isSnapshotId(id)) return undefined;
    return this.readRecord<SnapshotRecord>(join(this.dir, 'snapshots', id), (r, size) => ({
      ...r,
      sizeBytes: size,
    }));
  }

  /** Every volume, by ID. */
  async listVolumes(): Promise<VolumeRecord[]> {
    return this.list('volumes', (id) => this.getVolume(id));
  }

  /** Every snapshot, by ID. */
  async listSnapshots(): Promise<SnapshotRecord[]> {
    return this.list('snapshots', (id) => this.getSnapshot(id));
  }

  /**
   * Makes volume `id` of `capacityBytes`: empty (sparse), or a reflink copy of a snapshot's
   * or a volume's disk grown to the size. The caller holds the ID's lock and has checked
   * that no volume of that ID exists.
   */
  async createVolume(id: string, record: Omit<VolumeRecord, 'id' | 'createdAt'>): Promise<VolumeRecord> {
    if (!isVolumeId(id)) throw new PoolError('not-found', `${JSON.stringify(id)} is not a volume ID`);
    let from: string | undefined;
    let fromSize = 0;
    if (record.source?.snapshotId) {
      const snap = await this.getSnapshot(record.source.snapshotId);
      if (!snap) throw new PoolError('not-found', `snapshot ${record.source.snapshotId} does not exist`);
      from = join(this.dir, 'snapshots', snap.id, 'disk');
      fromSize = snap.sizeBytes;
    } else if (record.source?.volumeId) {
      const vol = await this.getVolume(record.source.volumeId);
      if (!vol) throw new PoolError('not-found', `volume ${record.source.volumeId} does not exist`);
      from = this.diskPath(vol.id);
      fromSize = vol.capacityBytes;
    }
    if (from && record.capacityBytes < fromSize)
      throw new PoolError(
        'too-small',
        `the source holds ${fromSize} bytes, more than ${record.capacityBytes}`,
      );
    // Thin: a new volume takes no space until written; refuse one the pool could never hold.
    const { availableBytes } = await this.space();
    if (record.capacityBytes - fromSize > availableBytes)
      throw new PoolError(
        'no-space',
        `the pool has ${availableBytes} bytes free, less than the ${record.capacityBytes} bytes asked for`,
      );
    const full: VolumeRecord = { id, ...record, createdAt: new Date().toISOString() };
    return this.publish('volumes', id, full, async (disk) => {
      if (from) await reflinkCopy(from, disk);
      else await makeSparse(disk);
      await truncate(disk, record.capacityBytes);
    });
  }

  /** Removes a volume; false when it did not exist. Refused while a loop device holds it (`inUse`). */
  async deleteVolume(id: string, inUse: (disk: string) => Promise<boolean>): Promise<boolean> {
    if (!(await this.getVolume(id))) return false;
    if (await inUse(this.diskPath(id))) throw new PoolError('in-use', `volume ${id} is staged on a node`);
    await this.remove('volumes', id);
    return true;
  }

  /** Grows a volume's disk to `bytes` (never shrinks); returns the new size. */
  async expandVolume(id: string, bytes: number): Promise<number> {
    const vol = await this.getVolume(id);
    if (!vol) throw new PoolError('not-found', `volume ${id} does not exist`);
    if (bytes <= vol.capacityBytes) return vol.capacityBytes;
    const { availableBytes } = await this.space();
    if (bytes - vol.capacityBytes > availableBytes)
      throw new PoolError(
        'no-space',
        `the pool has ${availableBytes} bytes free, less than the growth asked for`,
      );
    await truncate(this.diskPath(id), bytes);
    const dir = join(this.dir, 'volumes', id);
    await writeJson(join(dir, 'meta.json'), { ...vol, capacityBytes: bytes });
    return bytes;
  }

  /** Snapshot `id` of a volume: a reflink copy of its disk. The caller holds the snapshot ID's lock. */
  async createSnapshot(id: string, name: string, sourceVolumeId: string): Promise<SnapshotRecord> {
    if (!isSnapshotId(id)) throw new PoolError('not-found', `${JSON.stringify(id)} is not a snapshot ID`);
    const vol = await this.getVolume(sourceVolumeId);
    if (!vol) throw new PoolError('not-found', `volume ${JSON.stringify(sourceVolumeId)} does not exist`);
    const record: SnapshotRecord = {
      id,
      name,
      sourceVolumeId: vol.id,
      sizeBytes: vol.capacityBytes,
      createdAt: new Date().toISOString(),
    };
    return this.publish('snapshots', id, record, (disk) => reflinkCopy(this.diskPath(vol.id), disk));
  }

  /** Removes a snapshot; false when it did not exist. */
  async deleteSnapshot(id: string): Promise<boolean> {
    if (!(await this.getSnapshot(id))) return false;
    await this.remove('snapshots', id);
    return true;
  }

  /** Builds an entry in tmp/, then renames it into `kind`/`id`: all or nothing. */
  private async publish<T extends { id: string }>(
    kind: 'volumes' | 'snapshots',
    id: string,
    record: T,
    fill: (disk: string) => Promise<void>,
  ): Promise<T> {
    const tmp = join(this.dir, 'tmp', `${id}.${randomBytes(6).toString('hex')}`);
    await mkdir(tmp, { mode: 0o700 });
    try {
      await fill(join(tmp, 'disk'));
      await writeJson(join(tmp, 'meta.json'), record);
      await rename(tmp, join(this.dir, kind, id));
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    }
    return record;
  }

  /** Renames the entry out of sight first, so a crash mid-removal leaves only tmp/ litter. */
  private async remove(kind: 'volumes' | 'snapshots', id: string): Promise<void> {
    const gone = join(this.dir, 'tmp', `deleting.${id}.${randomBytes(6).toString('hex')}`);
    await rename(join(this.dir, kind, id), gone);
    await rm(gone, { recursive: true, force: true });
  }

  private async readRecord<T>(dir: string, withSize: (r: T, size: number) => T): Promise<T | undefined> {
    try {
      const [meta, st] = await Promise.all([
        readFile(join(dir, 'meta.json'), 'utf8'),
        stat(join(dir, 'disk')),
      ]);
      return withSize(JSON.parse(meta) as T, st.size);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  private async list<T>(kind: string, get: (id: string) => Promise<T | undefined>): Promise<T[]> {
    const ids = (await readdir(join(this.dir, kind))).sort();
    const out: T[] = [];
    for (const id of ids) {
      const r = await get(id);
      if (r) out.push(r);
    }
    return out;
  }
}

/** `cp --reflink=always`: shares the source's blocks, or fails (never a silent full copy). */
async function reflinkCopy(from: string, to: string): Promise<void> {
  await runTool('cp', ['--reflink=always', '--', from, to]);
}

async function makeSparse(path: string): Promise<void> {
  const fh = await open(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
  await fh.close();
}

async function writeJson(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, path);
}
