/**
 * A running CSI driver on a fresh real pool for the node tests, with helpers that make the
 * CSI calls the way the kubelet and the provisioner would.
 */

import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type CsiDriver, startCsiDriver } from '../../../src/controllers/csi-driver/csi-driver';
import {
  VolumeCapability_AccessMode_Mode as Mode,
  type VolumeCapability,
} from '../../../src/controllers/csi-driver/generated/csi/csi';
import { csiClients } from './csi-client';
import { makeTestPool, type TestPool } from './pool-fixture';

export const MiB = 1024 * 1024;

/** A filesystem (ext4 unless said) capability. */
export const mountCap = (mode = Mode.SINGLE_NODE_WRITER, fsType = 'ext4'): VolumeCapability => ({
  mount: { fsType, mountFlags: [], volumeMountGroup: '' },
  accessMode: { mode },
});
/** A block capability. */
export const blockCap = (mode = Mode.SINGLE_NODE_WRITER): VolumeCapability => ({
  block: {},
  accessMode: { mode },
});

/** The driver of the enclosing describe: started in beforeAll on a 2 GiB pool, cleaned up in afterAll. */
export function useTestDriver(nodeId = 'node-a') {
  let tp: TestPool;
  let driver: CsiDriver;
  let clients: ReturnType<typeof csiClients>;
  beforeAll(async () => {
    tp = await makeTestPool(2 * 1024 ** 3);
    const socket = join(tp.base, 'csi.sock');
    driver = await startCsiDriver({
      socketPath: socket,
      poolDir: tp.dir,
      poolImage: tp.image,
      poolSizeBytes: 2 * 1024 ** 3,
      nodeId,
      version: 'test',
    });
    clients = csiClients(socket);
  });
  afterAll(async () => {
    clients?.close();
    await tp?.cleanup(async () => {
      await driver?.stop();
    });
  });

  const t = {
    get csi() {
      return clients;
    },
    get pool() {
      return tp;
    },
    /** The temporary directory for staging and target paths. */
    base: () => tp.base,
    async create(
      name: string,
      bytes: number,
      cap: VolumeCapability,
      source?: { snapshot?: string; volume?: string },
    ) {
      const res = await clients.controller.createVolume({
        name,
        capacityRange: { requiredBytes: bytes, limitBytes: 0 },
        volumeCapabilities: [cap],
        parameters: {},
        secrets: {},
        mutableParameters: {},
        volumeContentSource: source?.snapshot
          ? { snapshot: { snapshotId: source.snapshot } }
          : source?.volume
            ? { volume: { volumeId: source.volume } }
            : undefined,
      });
      return res.volume!;
    },
    stage: (volumeId: string, staging: string, cap: VolumeCapability) =>
      clients.node.nodeStageVolume({
        volumeId,
        stagingTargetPath: staging,
        volumeCapability: cap,
        publishContext: {},
        secrets: {},
        volumeContext: {},
      }),
    publish: (volumeId: string, staging: string, target: string, cap: VolumeCapability, readonly = false) =>
      clients.node.nodePublishVolume({
        volumeId,
        stagingTargetPath: staging,
        targetPath: target,
        volumeCapability: cap,
        readonly,
        publishContext: {},
        secrets: {},
        volumeContext: {},
      }),
    unpublish: (volumeId: string, targetPath: string) =>
      clients.node.nodeUnpublishVolume({ volumeId, targetPath }),
    unstage: (volumeId: string, stagingTargetPath: string) =>
      clients.node.nodeUnstageVolume({ volumeId, stagingTargetPath }),
  };
  return t;
}
