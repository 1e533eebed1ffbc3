/**
 * What the node service has done with each volume on this node (where it is staged, at
 * which target paths it is published, with which access mode and read-only loop device),
 * kept as one JSON file per volume in `<pool>/nodes/<node id>/`, so a restarted driver
 * still knows, and RWOP (SINGLE_NODE_SINGLE_WRITER) can be enforced across calls.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One NodePublishVolume that holds. */
export interface Publication {
  targetPath: string;
  readOnly: boolean;
  block: boolean;
  /** The access mode's number (csi.v1 VolumeCapability.AccessMode.Mode). */
  mode: number;
  /** The read-only loop device made for a read-only block publication, detached with it. */
  roDevice?: string;
}

/** A volume's state on this node. */
export interface VolumeNodeState {
  stagingPath?: string;
  block?: boolean;
  publications: Publication[];
}

/** The per-volume state files of one node. */
export class NodeState {
  constructor(readonly dir: string) {}

  /** The volume's state (empty when none); `volumeId` has been checked by the caller. */
  async get(volumeId: string): Promise<VolumeNodeState> {
    try {
      return JSON.parse(await readFile(join(this.dir, `${volumeId}.json`), 'utf8')) as VolumeNodeState;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { publications: [] };
      throw err;
    }
  }

  /** Saves the volume's state, or removes its file once nothing is staged or published. */
  async put(volumeId: string, s: VolumeNodeState): Promise<void> {
    const path = join(this.dir, `${volumeId}.json`);
    if (!s.stagingPath && s.publications.length === 0) {
      await rm(path, { force: true });
      return;
    }
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFile(`${path}.tmp`, `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
    await rename(`${path}.tmp`, path);
  }
}
