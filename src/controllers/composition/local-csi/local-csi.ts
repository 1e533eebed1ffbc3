/**
 * The project's CSI driver as local mode runs it: the same pool (an XFS image with reflink,
 * loop-mounted under the state directory) and the same Controller and Node services as
 * `kubevirt-ts csi-driver`, called in-process instead of over the CSI socket: local mode
 * has no kubelet or sidecars to speak gRPC to, so one process is both CO and plugin.
 * The pool is made and mounted on first use (a local mode without claims mounts nothing)
 * and unmounted at stop when no volume holds it.
 */
import { accessSync, constants } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { ControllerService } from '../../csi-driver/controller-service';
import { NodeService } from '../../csi-driver/node-service';
import { Pool } from '../../csi-driver/pool';
import { mountPoolFilesystem, unmountPoolFilesystem } from '../../csi-driver/pool-filesystem';

/** Local mode's default pool size (a sparse image: it takes only what volumes write). */
export const LOCAL_POOL_SIZE_BYTES = 20 * 1024 ** 3;

/** Options of {@link LocalCsi}. */
export interface LocalCsiOptions {
  /** Directory under which the pool's image, mount point and staging mounts live. */
  dir: string;
  nodeId: string;
  poolSizeBytes?: number;
}

/** The driver's services once the pool is mounted. */
export interface CsiServices {
  controller: ControllerService;
  node: NodeService;
  pool: Pool;
}

function onPath(tool: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((d) => {
    try {
      accessSync(join(d, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Why this host cannot hold the pool (root, mkfs.xfs, loop devices), or undefined. */
export function localCsiProblem(): string | undefined {
  if (process.getuid?.() !== 0) return 'the CSI pool needs root (it loop-mounts an XFS image)';
  for (const tool of ['mkfs.xfs', 'losetup', 'mount'])
    if (!onPath(tool)) return `the CSI pool needs ${tool}, which is not on PATH`;
  try {
    accessSync('/dev/loop-control', constants.W_OK);
  } catch {
    return 'the CSI pool needs loop devices (/dev/loop-control is missing)';
  }
  return undefined;
}

/** The driver in-process, its pool mounted on first use. */
export class LocalCsi {
  /** Where volumes are staged (kubelet's `plugins/kubernetes.io/csi/<driver>/.../globalmount`). */
  readonly stagingDir: string;
  readonly poolDir: string;
  readonly nodeId: string;
  private services: Promise<CsiServices> | undefined;

  constructor(private readonly o: LocalCsiOptions) {
    this.stagingDir = join(o.dir, 'staging');
    this.poolDir = join(o.dir, 'pool');
    this.nodeId = o.nodeId;
  }

  /** The services, mounting the pool (making its image the first time) when not yet done. */
  ready(): Promise<CsiServices> {
    this.services ??= this.mount().catch((err) => {
      this.services = undefined; // the next call tries again
      throw err;
    });
    return this.services;
  }

  private async mount(): Promise<CsiServices> {
    await mountPoolFilesystem({
      dir: this.poolDir,
      image: join(this.o.dir, 'pool.img'),
      sizeBytes: this.o.poolSizeBytes ?? LOCAL_POOL_SIZE_BYTES,
    });
    // Loop devices report their backing files by resolved path: the pool's paths must be too.
    const pool = new Pool(await realpath(this.poolDir));
    await pool.init();
    return {
      pool,
      controller: new ControllerService({ pool, nodeId: this.o.nodeId }),
      node: new NodeService({ pool, nodeId: this.o.nodeId }),
    };
  }

  /** Unmounts the pool unless a volume is still attached or mounted from it (then it stays). */
  async close(): Promise<void> {
    if (!this.services) return;
    this.services = undefined;
    await unmountPoolFilesystem(this.poolDir).catch(() => undefined);
  }
}
