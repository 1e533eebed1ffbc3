/**
 * The real CSI sidecars (csi-provisioner, csi-snapshotter, snapshot-controller, host
 * processes: test/cluster/csi-sidecars.ts) against the driver on a test pool and the shared
 * API server, with no kubelet: a PVC of an Immediate class (`shared: "true"`, so no node
 * topology is needed) is provisioned into the pool, a VolumeSnapshot of it becomes
 * readyToUse, a PVC restored from it holds the bytes written into the source volume's file
 * before the snapshot, and deleting the claims and the snapshot deletes their volumes and
 * snapshot in the pool. Pods on such volumes are test/cluster/csi-provisioning.test.ts.
 */
import { readFileSync } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type CsiDriver, startCsiDriver } from '../../../src/controllers/csi-driver/csi-driver';
import {
  csiDriverObject,
  storageClassObject,
  volumeSnapshotClassObject,
} from '../../../src/controllers/csi-driver/objects';
import {
  type Sidecars,
  sidecarsUnavailableReason,
  snapshotCrdFiles,
  startSidecars,
} from '../../cluster/csi-sidecars';
import { integration } from '../../support/integration';
import {
  type ControlPlaneAccess,
  available as kubeAvailable,
  sharedControlPlane,
  unavailableReason,
} from '../../support/kube';
import { waitFor } from '../../support/wait';
import { makeTestPool, poolTestsEnabled, type TestPool } from './pool-fixture';

const noSidecars = sidecarsUnavailableReason();
const enabled =
  integration('Kubernetes control plane', kubeAvailable(), unavailableReason) &&
  poolTestsEnabled('CSI sidecars (API server)') &&
  integration('CSI sidecars', noSidecars === undefined, noSidecars ?? '');
const NS = 'csi-sidecars-api';
const CLASS = 'kubevirt-ts-shared-sidecars-test';
const SNAP = { group: 'snapshot.storage.k8s.io', version: 'v1' };
const MARK = 'written-into-the-source-volume-before-its-snapshot';

describe.skipIf(!enabled)('the real CSI sidecars provision and snapshot through the API server', () => {
  let cp: ControlPlaneAccess;
  let tp: TestPool;
  let driver: CsiDriver | undefined;
  let sidecars: Sidecars | undefined;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let objects: KubernetesObjectApi;
  let crds: Array<Record<string, unknown>> = [];
  const classObjects = () => [
    volumeSnapshotClassObject(CLASS),
    storageClassObject({ name: CLASS, shared: true, defaultVirtClass: false }),
    csiDriverObject(),
  ];
  const waitShowing = <T>(what: string, f: () => Promise<T | undefined>, ms = 90_000) =>
    waitFor(what, f, ms, 300).catch((e) => {
      throw new Error(`${e}\n${sidecars?.logs()}`);
    });
  async function createOrKeep(o: object) {
    await objects.create(o as never).catch((e: { code?: number }) => {
      if (e.code !== 409) throw e;
    });
  }

  beforeAll(async () => {
    cp = await sharedControlPlane();
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    objects = KubernetesObjectApi.makeApiClient(kc);
    tp = await makeTestPool(1024 ** 3);
    const socket = join(tp.base, 'csi.sock');
    driver = await startCsiDriver({
      socketPath: socket,
      poolDir: tp.dir,
      poolImage: tp.image,
      poolSizeBytes: 1024 ** 3,
      nodeId: 'sidecars-test-node',
      version: 'test',
    });
    crds = snapshotCrdFiles().flatMap((f) =>
      parseAllDocuments(readFileSync(f, 'utf8'))
        .map((d) => d.toJSON() as Record<string, unknown>)
        .filter(Boolean),
    );
    for (const crd of crds) await createOrKeep(crd);
    await waitFor(
      'the VolumeSnapshot CRDs established',
      async () => {
        for (const crd of crds) {
          const o = (await objects.read(crd as never)) as {
            status?: { conditions?: Array<{ type: string; status: string }> };
          };
          if (!o.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
            return false;
        }
        return true;
      },
      60_000,
      250,
    );
    for (const o of classObjects()) await createOrKeep(o);
    // No kubelet, so no CSINode: an Immediate volume is asked for with no topology.
    sidecars = startSidecars(socket, cp.kubeconfigPath, tp.base, ['--immediate-topology=false']);
    await core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined);
  }, 120_000);

  afterAll(async () => {
    await sidecars?.stop();
    await tp?.cleanup(async () => {
      await driver?.stop();
    });
    await core?.deleteNamespace({ name: NS }).catch(() => undefined);
    // The CSIDriver and the CRDs may be another test's on this shared API server: only the class objects go.
    for (const o of classObjects().slice(0, 2)) await objects?.delete(o as never).catch(() => {});
  }, 120_000);

  const pvc = (name: string, dataSource?: { apiGroup: string; kind: string; name: string }) => ({
    metadata: { name },
    spec: {
      storageClassName: CLASS,
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '16Mi' } },
      ...(dataSource ? { dataSource } : {}),
    },
  });
  const boundVolume = async (name: string) => {
    const c = await waitShowing(`PVC ${name} Bound`, async () => {
      const c = await core.readNamespacedPersistentVolumeClaim({ name, namespace: NS });
      return c.status?.phase === 'Bound' ? c : undefined;
    });
    const pv = await core.readPersistentVolume({ name: c.spec?.volumeName ?? '' });
    return pv.spec?.csi?.volumeHandle ?? '';
  };
  const readStart = async (file: string, n: number) => {
    const f = await open(file, 'r');
    try {
      const buf = Buffer.alloc(n);
      await f.read(buf, 0, n, 0);
      return buf.toString();
    } finally {
      await f.close();
    }
  };

  it('provisions, snapshots, restores and deletes through csi-provisioner and csi-snapshotter', {
    timeout: 240_000,
  }, async () => {
    await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: pvc('source') });
    const source = await boundVolume('source');
    expect(source).toMatch(/^v-[0-9a-f]{32}$/);
    expect(await readdir(join(tp.dir, 'volumes'))).toContain(source);
    const f = await open(join(tp.dir, 'volumes', source, 'disk'), 'r+');
    await f.write(MARK, 0);
    await f.close();

    await custom.createNamespacedCustomObject({
      ...SNAP,
      namespace: NS,
      plural: 'volumesnapshots',
      body: {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: { name: 'snap' },
        spec: { volumeSnapshotClassName: CLASS, source: { persistentVolumeClaimName: 'source' } },
      },
    });
    const snap = (await waitShowing('the VolumeSnapshot readyToUse', async () => {
      const s = (await custom.getNamespacedCustomObject({
        ...SNAP,
        namespace: NS,
        plural: 'volumesnapshots',
        name: 'snap',
      })) as {
        status?: { readyToUse?: boolean; boundVolumeSnapshotContentName?: string };
      };
      return s.status?.readyToUse ? s : undefined;
    })) as { status: { boundVolumeSnapshotContentName: string } };
    const content = (await custom.getClusterCustomObject({
      ...SNAP,
      plural: 'volumesnapshotcontents',
      name: snap.status.boundVolumeSnapshotContentName,
    })) as { status?: { snapshotHandle?: string } };
    const handle = content.status?.snapshotHandle ?? '';
    expect(handle).toMatch(/^s-[0-9a-f]{32}$/);
    expect(await readdir(join(tp.dir, 'snapshots'))).toEqual([handle]);

    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvc('restored', { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' }),
    });
    const restored = await boundVolume('restored');
    expect(restored).not.toBe(source);
    expect(await readStart(join(tp.dir, 'volumes', restored, 'disk'), MARK.length)).toBe(MARK);

    await custom.deleteNamespacedCustomObject({
      ...SNAP,
      namespace: NS,
      plural: 'volumesnapshots',
      name: 'snap',
    });
    for (const name of ['restored', 'source'])
      await core.deleteNamespacedPersistentVolumeClaim({ name, namespace: NS });
    await waitShowing('the pool empty', async () => {
      const v = await readdir(join(tp.dir, 'volumes'));
      const s = await readdir(join(tp.dir, 'snapshots'));
      return v.length === 0 && s.length === 0 ? true : undefined;
    });
  });
});
