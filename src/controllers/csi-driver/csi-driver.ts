/**
 * The CSI driver composed: the pool's filesystem mounted (or found mounted), the pool's
 * layout, the Identity, Controller and Node services served on one unix socket, and,
 * when asked, the kubelet's plugin registration.
 * `kubevirt-ts csi-driver` runs it; tests start it directly.
 */
import { realpath } from 'node:fs/promises';
import { ControllerService } from './controller-service';
import { type CsiServer, serveCsi } from './grpc-server';
import { DRIVER_NAME, IdentityService } from './identity-service';
import { checkNodeId } from './ids';
import { KubeletRegistration } from './kubelet-registration';
import { NodeService } from './node-service';
import { Pool } from './pool';
import { mountPoolFilesystem, unmountPoolFilesystem } from './pool-filesystem';

/** Options of {@link startCsiDriver}. */
export interface CsiDriverOptions {
  /** The unix socket to serve on. */
  socketPath: string;
  /** The pool's mount point. */
  poolDir: string;
  /** The XFS image made and loop-mounted there when the directory is not a mount point yet. */
  poolImage: string;
  /** The image's size when it is made, bytes. */
  poolSizeBytes: number;
  /** This node's name (topology and NodeGetInfo). */
  nodeId: string;
  /** The driver's version (GetPluginInfo). */
  version: string;
  /**
   * Registration with the kubelet: the kubelet's plugins_registry directory (as mounted
   * here) and the CSI socket's path as the kubelet sees it (default: `socketPath`).
   * Absent: no registration (tests, local mode).
   */
  kubeletRegistration?: { registryDir: string; csiEndpoint?: string };
  log?: (message: string) => void;
  /** Called with each CSI RPC's method and outcome, and each kubelet registration call. */
  trace?: (message: string) => void;
}

/** A running driver. */
export interface CsiDriver {
  server: CsiServer;
  pool: Pool;
  /** Whether this driver mounted the pool (so `stop({ unmountPool: true })` may unmount it). */
  mountedPool: boolean;
  registration?: KubeletRegistration;
  stop(o?: { unmountPool?: boolean }): Promise<void>;
}

/** Mounts the pool and serves the three CSI services. */
export async function startCsiDriver(o: CsiDriverOptions): Promise<CsiDriver> {
  const log = o.log ?? (() => {});
  const nodeId = checkNodeId('node id', o.nodeId);
  const mounted = await mountPoolFilesystem({
    dir: o.poolDir,
    image: o.poolImage,
    sizeBytes: o.poolSizeBytes,
  });
  // Loop devices report their backing files by resolved path: the pool's paths must be too.
  const pool = new Pool(await realpath(o.poolDir));
  await pool.init();
  const server = await serveCsi(
    o.socketPath,
    {
      identity: new IdentityService({ pool, version: o.version }),
      controller: new ControllerService({ pool, nodeId }),
      node: new NodeService({ pool, nodeId }),
    },
    log,
    o.trace,
  );
  const registration = o.kubeletRegistration
    ? new KubeletRegistration({
        registryDir: o.kubeletRegistration.registryDir,
        driverName: DRIVER_NAME,
        csiEndpoint: o.kubeletRegistration.csiEndpoint ?? o.socketPath,
        log,
        trace: o.trace,
      })
    : undefined;
  await registration?.start();
  log(
    `serving CSI on ${o.socketPath}; pool ${pool.dir} (${mounted.fsType}${mounted.mountedHere ? `, mounted from ${o.poolImage}` : ''})`,
  );
  return {
    server,
    pool,
    mountedPool: mounted.mountedHere,
    registration,
    async stop(s) {
      await registration?.stop();
      await server.close();
      if (s?.unmountPool && mounted.mountedHere) await unmountPoolFilesystem(o.poolDir);
    },
  };
}
