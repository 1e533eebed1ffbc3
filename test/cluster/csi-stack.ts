/**
 * The project's CSI stack on the one-node cluster for a test: the driver in this process
 * on a test pool, registered with the kubelet, the real csi-provisioner (and the snapshot
 * sidecars) as host processes, and the CSIDriver and `kubevirt-ts-local` StorageClass
 * (the default virt class). As test/cluster/csi-provisioning.test.ts sets it up, until
 * the operator installs it (issue 25's other part).
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type KubeConfig, KubernetesObjectApi, StorageV1Api } from '@kubernetes/client-node';
import { type ClusterInfo, clusterPaths } from '../../scripts/cluster/state';
import { type CsiDriver, startCsiDriver } from '../../src/controllers/csi-driver/csi-driver';
import { DRIVER_NAME } from '../../src/controllers/csi-driver/identity-service';
import { csiDriverObject, storageClassObject } from '../../src/controllers/csi-driver/objects';
import { makeTestPool, poolTestsEnabled, type TestPool } from '../controllers/csi-driver/pool-fixture';
import { clusterUnavailableReason } from '../support/cluster';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';
import { type Sidecars, sidecarsUnavailableReason, startSidecars } from './csi-sidecars';

/**
 * The gate of a cluster test file on the CSI stack: the one-node cluster, the test pool
 * (root, losetup, mkfs.xfs; `name` names the file's tests) and the sidecars, each through
 * {@link integration} (skipped with the reason, or failing under the README's command).
 */
export function csiClusterTestsEnabled(name: string): boolean {
  const why = clusterUnavailableReason();
  const noSidecars = sidecarsUnavailableReason();
  return (
    integration('one-node cluster', why === undefined, why ?? '') &&
    poolTestsEnabled(name) &&
    integration('CSI sidecars', noSidecars === undefined, noSidecars ?? '')
  );
}

export interface CsiStack {
  pool: TestPool;
  sidecars: Sidecars;
  /** Volume IDs in the pool now. */
  volumes(): Promise<string[]>;
  /** Stops the sidecars and the driver, removes the classes and the pool (failing on leftovers). */
  stop(): Promise<void>;
}

export async function startCsiStack(
  info: ClusterInfo,
  kc: KubeConfig,
  poolBytes = 2 * 1024 ** 3,
): Promise<CsiStack> {
  const storage = kc.makeApiClient(StorageV1Api);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const pool = await makeTestPool(poolBytes);
  const pluginDir = csiPluginDir(info);
  let driver: CsiDriver | undefined;
  let sidecars: Sidecars | undefined;
  const classes = [storageClassObject(), csiDriverObject()];
  const stop = async () => {
    await sidecars?.stop();
    await pool.cleanup(async () => {
      await driver?.stop();
    });
    await rm(pluginDir, { recursive: true, force: true });
    for (const o of classes) await objects.delete(o as never).catch(() => {});
  };
  try {
    driver = await startRegisteredDriver(info, storage, pool, poolBytes);
    for (const o of classes)
      await objects.create(o as never).catch((e: { code?: number }) => {
        if (e.code !== 409) throw e;
      });
    sidecars = startSidecars(join(pluginDir, 'csi.sock'), info.kubeconfigPath, pool.base);
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  return {
    pool,
    sidecars,
    volumes: () => readdir(join(pool.dir, 'volumes')).catch(() => []),
    stop,
  };
}

/** The driver's directory (its socket) under the node's kubelet plugins. */
export function csiPluginDir(info: ClusterInfo): string {
  return join(clusterPaths(info.stateDir).kubelet, 'plugins', DRIVER_NAME);
}

/**
 * Starts the driver in this process on `pool` (its socket in {@link csiPluginDir}),
 * registered with the node's kubelet, and waits for the driver in the node's CSINode: the
 * provisioner reads the node's topology there. The driver is stopped when the wait fails.
 */
export async function startRegisteredDriver(
  info: ClusterInfo,
  storage: StorageV1Api,
  pool: TestPool,
  poolBytes: number,
): Promise<CsiDriver> {
  const driver = await startCsiDriver({
    socketPath: join(csiPluginDir(info), 'csi.sock'),
    poolDir: pool.dir,
    poolImage: pool.image,
    poolSizeBytes: poolBytes,
    nodeId: info.nodeName,
    version: 'test',
    kubeletRegistration: { registryDir: join(clusterPaths(info.stateDir).kubelet, 'plugins_registry') },
  });
  try {
    await waitFor(
      'the driver in CSINode',
      async () =>
        (await storage.readCSINode({ name: info.nodeName }).catch(() => undefined))?.spec.drivers?.find(
          (d) => d.name === DRIVER_NAME,
        ),
      60_000,
      250,
    );
  } catch (err) {
    await driver.stop().catch(() => {});
    throw err;
  }
  return driver;
}
