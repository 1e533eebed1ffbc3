/**
 * Fixtures for the DataVolume clone tests on the embedded store: clone DataVolume bodies,
 * and the helpers that play the CSI provisioner (source claims, binding) and the
 * snapshotter (a VolumeSnapshot's readyToUse).
 */
import type { DataVolume } from '../../../src/api/generated/cdi/types';
import type { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { PersistentVolumeClaimType } from '../../../src/controllers/runtime/resources';
import { VolumeSnapshotType } from '../../../src/controllers/runtime/storage-resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { waitFor } from '../../support/wait';
import { NS } from './datavolume-fixtures';

export const CLASS = 'kubevirt-ts-local';
export const SOURCE_BYTES = '1142278537'; // a 1Gi Filesystem DataVolume's claim (6% overhead)
export const SOURCE_CAPACITY = '1142280192'; // what the driver made of it: rounded up to 4 KiB

/** A PersistentVolumeClaim as the tests read it. */
export type Claim = KubeObject & {
  spec?: Record<string, unknown> & { dataSource?: Record<string, string> };
  status?: { phase?: string; capacity?: Record<string, string> };
};

/** A DataVolume with `spec` (its source) and `storage`, no size unless `storage` asks one. */
export function cloneDv(
  name: string,
  spec: Record<string, unknown>,
  storage: Record<string, unknown> = {},
): DataVolume {
  return {
    apiVersion: 'cdi.kubevirt.io/v1beta1',
    kind: 'DataVolume',
    metadata: { name, namespace: NS },
    spec: { ...spec, storage },
  } as DataVolume;
}

/** A DataVolume's Ready condition. */
export const ready = (d: DataVolume) => d.status?.conditions?.find((c) => c.type === 'Ready');

/**
 * Helpers on the store `store()` returns when called (a test's beforeEach opens a new one):
 * wait for a claim, bind it, make a bound source claim, make or update a VolumeSnapshot.
 */
export function cloneHelpers(store: () => EmbeddedStore) {
  const claim = (name: string) =>
    waitFor(`claim ${name}`, () =>
      store()
        .get<Claim>(PersistentVolumeClaimType, name, NS)
        .catch(() => undefined),
    );
  const bind = async (name: string, capacity?: string) => {
    const c = await claim(name);
    await store().updateStatus(PersistentVolumeClaimType, {
      ...c,
      status: { phase: 'Bound', ...(capacity ? { capacity: { storage: capacity } } : {}) },
    } as KubeObject);
  };
  /** A source claim as a WaitForFirstConsumer import left it: bound on node-1. */
  const sourceClaim = async (name: string, o: { volumeMode?: string; className?: string } = {}) => {
    await store().create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: NS, annotations: { 'volume.kubernetes.io/selected-node': 'node-1' } },
      spec: {
        accessModes: ['ReadWriteOnce'],
        volumeMode: o.volumeMode ?? 'Filesystem',
        storageClassName: o.className ?? CLASS,
        resources: { requests: { storage: SOURCE_BYTES } },
      },
    } as KubeObject);
    await bind(name, SOURCE_CAPACITY);
  };
  const snapshot = async (name: string, readyToUse: boolean) => {
    const existing = await store()
      .get<KubeObject>(VolumeSnapshotType, name, NS)
      .catch(() => undefined);
    const body = {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { name, namespace: NS },
      spec: { source: { persistentVolumeClaimName: 'src' }, volumeSnapshotClassName: CLASS },
    };
    const made = existing ?? (await store().create(VolumeSnapshotType, body as KubeObject));
    await store().updateStatus(VolumeSnapshotType, {
      ...made,
      status: { readyToUse, restoreSize: SOURCE_BYTES },
    } as KubeObject);
  };
  return { claim, bind, sourceClaim, snapshot };
}
