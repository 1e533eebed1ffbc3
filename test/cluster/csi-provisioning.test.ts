/**
 * Dynamic provisioning on the real one-node cluster through the real Kubernetes sidecars:
 * the driver (in this process, on a test pool, registered with the kubelet) and
 * csi-provisioner, csi-snapshotter and snapshot-controller as host processes
 * (test/cluster/csi-sidecars.ts). A PVC on `kubevirt-ts-local` (WaitForFirstConsumer) gets
 * a PV when its first pod is scheduled; that pod writes a file, a second pod reads it; a
 * VolumeSnapshot becomes readyToUse and a PVC restored from it has the file. Everything is
 * deleted through the API (the provisioner's DeleteVolume, the snapshotter's
 * DeleteSnapshot), and the pool's leftover check fails the test on a mount or loop device
 * left behind.
 *
 * The driver's one name registers once with a kubelet, and these files also install and
 * delete the snapshot CRDs: the CSI cluster test files take a host lock for their whole
 * run (test/support/host-lock.ts; two at once failed each other in a full run).
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  StorageV1Api,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { CsiDriver } from '../../src/controllers/csi-driver/csi-driver';
import { DRIVER_NAME } from '../../src/controllers/csi-driver/identity-service';
import {
  csiDriverObject,
  LOCAL_CLASS,
  storageClassObject,
  volumeSnapshotClassObject,
} from '../../src/controllers/csi-driver/objects';
import { makeTestPool, type TestPool } from '../controllers/csi-driver/pool-fixture';
import { sharedCluster } from '../support/cluster';
import {
  createTestNamespace,
  deleteNamespaceAndWait,
  waitForDriverPvsDeleted,
} from '../support/cluster-namespace';
import { acquireHostLock } from '../support/host-lock';
import { waitFor } from '../support/wait';
import { installSnapshotCrds, removeSnapshotCrds, type Sidecars, startSidecars } from './csi-sidecars';
import { csiClusterTestsEnabled, csiPluginDir, startRegisteredDriver } from './csi-stack';

const enabled = csiClusterTestsEnabled('CSI provisioning');
const NS = 'csi-provisioning';
const SNAP = { group: 'snapshot.storage.k8s.io', version: 'v1' };

describe.skipIf(!enabled)('PVCs on kubevirt-ts-local through the real CSI sidecars', () => {
  let info: ClusterInfo;
  let tp: TestPool;
  let driver: CsiDriver | undefined;
  let sidecars: Sidecars | undefined;
  let core: CoreV1Api;
  let storage: StorageV1Api;
  let custom: CustomObjectsApi;
  let objects: KubernetesObjectApi;
  let pluginDir = '';
  let crds: Array<Record<string, unknown>> = [];
  const classObjects = () => [volumeSnapshotClassObject(), storageClassObject(), csiDriverObject()];

  /** waitFor, with the sidecars' logs in the failure. */
  const waitShowing = <T>(what: string, f: () => Promise<T | undefined>, ms = 120_000) =>
    waitFor(what, f, ms, 300).catch((e) => {
      throw new Error(`${e}\n${sidecars?.logs()}`);
    });

  /** Creates `o`; one left by an interrupted run (409) is kept. */
  async function createOrKeep(o: object) {
    await objects.create(o as never).catch((e: { code?: number }) => {
      if (e.code !== 409) throw e;
    });
  }

  let releaseCsiLock: (() => void) | undefined;
  beforeAll(async () => {
    info = await sharedCluster();
    releaseCsiLock = await acquireHostLock('csi-driver', 900_000);
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    storage = kc.makeApiClient(StorageV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    objects = KubernetesObjectApi.makeApiClient(kc);
    tp = await makeTestPool(2 * 1024 ** 3);
    pluginDir = csiPluginDir(info);
    driver = await startRegisteredDriver(info, storage, tp, 2 * 1024 ** 3);
    crds = await installSnapshotCrds(objects);
    for (const o of classObjects()) await createOrKeep(o);
    sidecars = startSidecars(join(pluginDir, 'csi.sock'), info.kubeconfigPath, tp.base);
    await createTestNamespace(core, NS);
  }, 1_200_000);

  afterAll(async () => {
    // The namespace's PVCs and snapshots go first, while the sidecars still run: their
    // volumes and snapshots are deleted by DeleteVolume and DeleteSnapshot.
    if (core) {
      await deleteNamespaceAndWait(core, NS, 120_000);
      await waitForDriverPvsDeleted(core, DRIVER_NAME, 120_000, () => sidecars?.logs());
    }
    await sidecars?.stop();
    await tp?.cleanup(async () => {
      await driver?.stop();
      if (tp) {
        const left = await readdir(join(tp.dir, 'volumes')).catch(() => []);
        if (left.length) console.error(`volumes left in the pool: ${left.join(', ')}`);
      }
    });
    if (pluginDir) await rm(pluginDir, { recursive: true, force: true });
    for (const o of classObjects()) await objects?.delete(o as never).catch(() => {});
    if (objects) await removeSnapshotCrds(objects, crds);
    releaseCsiLock?.();
  }, 300_000);

  /** A pod of the kubevirt-ts image running `script` with `claim` on /data, until it has Succeeded. */
  async function runPod(name: string, claim: string, script: string): Promise<string> {
    const pod: V1Pod = {
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
        containers: [
          {
            name: 'c',
            image: info.images['kubevirt-ts'],
            imagePullPolicy: 'Never',
            command: ['/bin/sh', '-c', script],
            securityContext: { runAsUser: 0 },
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
      },
    };
    await core.createNamespacedPod({ namespace: NS, body: pod });
    await waitShowing(`pod ${name} Succeeded`, async () => {
      const p = await core.readNamespacedPod({ name, namespace: NS });
      if (p.status?.phase === 'Failed') throw new Error(`pod ${name} failed: ${JSON.stringify(p.status)}`);
      return p.status?.phase === 'Succeeded' ? p : undefined;
    });
    const out = await core.readNamespacedPodLog({ name, namespace: NS, container: 'c' });
    await core.deleteNamespacedPod({ name, namespace: NS });
    await waitFor(
      `pod ${name} gone`,
      async () => !(await core.readNamespacedPod({ name, namespace: NS }).catch(() => undefined)),
      60_000,
      250,
    );
    return out;
  }

  const pvc = (name: string, dataSource?: { apiGroup: string; kind: string; name: string }) => ({
    metadata: { name },
    spec: {
      storageClassName: LOCAL_CLASS,
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '64Mi' } },
      ...(dataSource ? { dataSource } : {}),
    },
  });

  it('provisions a PVC when its first pod is scheduled; a second pod reads what the first wrote', {
    timeout: 300_000,
  }, async () => {
    await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: pvc('data') });
    // WaitForFirstConsumer: nothing is provisioned before a pod uses the claim.
    await new Promise((r) => setTimeout(r, 2000));
    expect(
      (await core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: NS })).status?.phase,
    ).toBe('Pending');
    expect(await runPod('writer', 'data', 'echo written-by-writer > /data/f && sync && cat /data/f')).toBe(
      'written-by-writer\n',
    );
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: NS });
    expect(claim.status?.phase).toBe('Bound');
    const pv = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? '' });
    expect(pv.spec?.csi?.driver).toBe(DRIVER_NAME);
    expect(pv.spec?.csi?.volumeHandle).toMatch(/^v-[0-9a-f]{32}$/);
    expect(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.[0]).toMatchObject({
      key: 'topology.kubevirt-ts.io/node',
      values: [info.nodeName],
    });
    // The volume is the pool's: its file is there.
    expect(await readdir(join(tp.dir, 'volumes'))).toContain(pv.spec?.csi?.volumeHandle);
    expect(await runPod('reader', 'data', 'cat /data/f')).toBe('written-by-writer\n');
  });

  it('snapshots the volume (readyToUse) and restores it into a new PVC holding the file', {
    timeout: 300_000,
  }, async () => {
    await custom.createNamespacedCustomObject({
      ...SNAP,
      namespace: NS,
      plural: 'volumesnapshots',
      body: {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: { name: 'snap' },
        spec: { volumeSnapshotClassName: LOCAL_CLASS, source: { persistentVolumeClaimName: 'data' } },
      },
    });
    const snap = (await waitShowing('the VolumeSnapshot readyToUse', async () => {
      const s = (await custom.getNamespacedCustomObject({
        ...SNAP,
        namespace: NS,
        plural: 'volumesnapshots',
        name: 'snap',
      })) as { status?: { readyToUse?: boolean; boundVolumeSnapshotContentName?: string } };
      return s.status?.readyToUse ? s : undefined;
    })) as { status: { boundVolumeSnapshotContentName: string } };
    const content = (await custom.getClusterCustomObject({
      ...SNAP,
      plural: 'volumesnapshotcontents',
      name: snap.status.boundVolumeSnapshotContentName,
    })) as { status?: { snapshotHandle?: string } };
    expect(content.status?.snapshotHandle).toMatch(/^s-[0-9a-f]{32}$/);
    expect(await readdir(join(tp.dir, 'snapshots'))).toContain(content.status?.snapshotHandle);

    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvc('restored', { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' }),
    });
    expect(await runPod('restored-reader', 'restored', 'cat /data/f')).toBe('written-by-writer\n');
  });
});
