/**
 * The CSI driver on the real one-node cluster's kubelet, registering itself as
 * node-driver-registrar would: the driver (in this process, on a test pool) serves its
 * registration socket in the kubelet's plugins_registry/; the kubelet calls GetInfo, then
 * the driver's NodeGetInfo, reports the registration back, and records the driver in the
 * node's CSINode object (node ID and topology key) and the node's topology label. When the
 * driver stops, the kubelet removes it from CSINode. The CSIDriver object and the
 * `kubevirt-ts-local` StorageClass are applied to the cluster's API server as rendered.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, KubernetesObjectApi, StorageV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClusterInfo, clusterPaths } from '../../scripts/cluster/state';
import { type CsiDriver, startCsiDriver } from '../../src/controllers/csi-driver/csi-driver';
import { DRIVER_NAME } from '../../src/controllers/csi-driver/identity-service';
import { csiDriverObject, LOCAL_CLASS, storageClassObject } from '../../src/controllers/csi-driver/objects';
import { TOPOLOGY_KEY } from '../../src/controllers/csi-driver/topology';
import { makeTestPool, poolTestsEnabled, type TestPool } from '../controllers/csi-driver/pool-fixture';
import { clusterUnavailableReason, sharedCluster } from '../support/cluster';
import { acquireHostLock } from '../support/host-lock';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled =
  integration('one-node cluster', why === undefined, why ?? '') && poolTestsEnabled('CSI registration');

describe.skipIf(!enabled)('the CSI driver registers with the real kubelet', () => {
  let info: ClusterInfo;
  let tp: TestPool;
  let driver: CsiDriver | undefined;
  let storage: StorageV1Api;
  let core: CoreV1Api;
  let objects: KubernetesObjectApi;
  let pluginDir = '';
  const calls: string[] = [];

  let releaseCsiLock: (() => void) | undefined;
  beforeAll(async () => {
    info = await sharedCluster();
    // One driver name per kubelet: the CSI cluster test files run one at a time.
    releaseCsiLock = await acquireHostLock('csi-driver', 900_000);
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    storage = kc.makeApiClient(StorageV1Api);
    core = kc.makeApiClient(CoreV1Api);
    objects = KubernetesObjectApi.makeApiClient(kc);
    tp = await makeTestPool(1024 ** 3);
  }, 1_000_000);
  afterAll(async () => {
    await tp?.cleanup(async () => {
      await driver?.stop();
    });
    if (pluginDir) await rm(pluginDir, { recursive: true, force: true });
    for (const o of [storageClassObject(), csiDriverObject()])
      await objects.delete(o as never).catch(() => {});
    releaseCsiLock?.();
  });

  /** The driver's entry in the node's CSINode, if any. */
  async function csiNodeEntry() {
    const node = await storage.readCSINode({ name: info.nodeName }).catch(() => undefined);
    return node?.spec.drivers?.find((d) => d.name === DRIVER_NAME);
  }

  it('is registered by the kubelet from its plugins_registry socket, and deregistered when it stops', {
    timeout: 150_000,
  }, async () => {
    const kubelet = clusterPaths(info.stateDir).kubelet;
    pluginDir = join(kubelet, 'plugins', DRIVER_NAME);
    driver = await startCsiDriver({
      socketPath: join(pluginDir, 'csi.sock'),
      poolDir: tp.dir,
      poolImage: tp.image,
      poolSizeBytes: 1024 ** 3,
      nodeId: info.nodeName,
      version: 'test',
      kubeletRegistration: { registryDir: join(kubelet, 'plugins_registry') },
      trace: (m) => calls.push(`${new Date().toISOString()} ${m}`),
    });
    const entry = await waitFor('the driver in CSINode', () => csiNodeEntry(), 60_000, 250).catch((e) => {
      const kubeletLog = readFileSync(join(clusterPaths(info.stateDir).logs, 'kubelet.log'), 'utf8')
        .split('\n')
        .filter((l) => /csi|plugin/i.test(l) && !/device-plugin|Loaded volume plugin/.test(l))
        .slice(-30);
      throw new Error(
        `${e}; calls the driver got: ${JSON.stringify(calls, null, 1)}; the kubelet's log: ${kubeletLog.join('\n')}`,
      );
    });
    expect(entry).toMatchObject({ name: DRIVER_NAME, nodeID: info.nodeName, topologyKeys: [TOPOLOGY_KEY] });
    expect(driver.registration?.state).toEqual({ registered: true, error: undefined });
    const node = await core.readNode({ name: info.nodeName });
    expect(node.metadata?.labels?.[TOPOLOGY_KEY]).toBe(info.nodeName);
    expect(JSON.parse(node.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid'] ?? '{}')).toMatchObject(
      {
        [DRIVER_NAME]: info.nodeName,
      },
    );

    await driver.stop();
    driver = undefined;
    await waitFor('the driver gone from CSINode', async () => !(await csiNodeEntry()), 60_000, 250);
  });

  it('has a CSIDriver object and a kubevirt-ts-local StorageClass the API server accepts', async () => {
    for (const o of [csiDriverObject(), storageClassObject()]) await objects.create(o as never);
    const d = await storage.readCSIDriver({ name: DRIVER_NAME });
    expect(d.spec).toMatchObject({
      attachRequired: false,
      volumeLifecycleModes: ['Persistent'],
      fsGroupPolicy: 'File',
    });
    const sc = await storage.readStorageClass({ name: LOCAL_CLASS });
    expect(sc).toMatchObject({
      provisioner: DRIVER_NAME,
      volumeBindingMode: 'WaitForFirstConsumer',
      allowVolumeExpansion: true,
      metadata: { annotations: { 'storageclass.kubevirt.io/is-default-virt-class': 'true' } },
    });
  });
});
