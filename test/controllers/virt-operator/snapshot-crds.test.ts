/**
 * The VolumeSnapshot CRDs are the cluster's (the CSI snapshot stack's), not the install's:
 * the operator creates them only where absent, marks the ones it created, never adopts or
 * updates existing ones, and leaves them all when the KubeVirt CR is removed (deleting a CRD
 * would delete every user's VolumeSnapshots). The operator's rendering, applied to and
 * removed from the embedded store (which serves the KubeVirt kinds itself, so the storage
 * part of the install is applied).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { crdsDir } from '../../../scripts/gen-crds';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { CustomResourceDefinitionType, NamespaceType } from '../../../src/controllers/runtime/resources';
import {
  StorageClassType,
  VolumeSnapshotClassType,
} from '../../../src/controllers/runtime/storage-resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { applyAll, deleteAll } from '../../../src/controllers/virt-operator/apply';
import {
  CREATED_IF_ABSENT_LABEL,
  MANAGED_BY_LABEL,
} from '../../../src/controllers/virt-operator/bookkeeping';
import { planCertificates } from '../../../src/controllers/virt-operator/cert-rotation';
import { snapshotCrdObjects } from '../../../src/controllers/virt-operator/components/storage';
import { renderInstallObjects } from '../../../src/controllers/virt-operator/install-objects';
import { checkKubeVirt } from '../../../src/controllers/virt-operator/kubevirt-spec';
import { DeploymentType, installedTypes } from '../../../src/controllers/virt-operator/resource-types';

const NS = 'kubevirt';
const SNAPSHOT_CRDS = [
  'volumesnapshotclasses.snapshot.storage.k8s.io',
  'volumesnapshotcontents.snapshot.storage.k8s.io',
  'volumesnapshots.snapshot.storage.k8s.io',
];

async function rendered(): Promise<KubeObject[]> {
  const { spec, errors } = checkKubeVirt(
    { metadata: { name: 'kubevirt', namespace: NS }, spec: {} },
    { registry: 'localhost/kubevirt-ts', tag: 'v1', pullPolicy: 'IfNotPresent' },
  );
  expect(errors).toEqual([]);
  const certs = await planCertificates(NS, { leaves: {} }, spec!.certs, new Date());
  return renderInstallObjects({ namespace: NS, crdsDir, generation: 1 }, spec!, certs);
}

/** The storage part of the rendering: what the embedded store can hold (no kubevirt.io CRDs). */
async function storageInstall(): Promise<KubeObject[]> {
  const all = await rendered();
  return all.filter(
    (o) =>
      SNAPSHOT_CRDS.includes(o.metadata!.name!) ||
      (o.kind === 'Deployment' && o.metadata?.name === 'snapshot-controller') ||
      o.kind === 'StorageClass' ||
      o.kind === 'VolumeSnapshotClass',
  );
}

let store: EmbeddedStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

async function openStore(): Promise<EmbeddedStore> {
  // VolumeSnapshotClass is served once its CRD exists, as on a cluster.
  store = await EmbeddedStore.open({ types: installedTypes.filter((t) => t !== VolumeSnapshotClassType) });
  await store.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  return store;
}

const crds = (s: EmbeddedStore) =>
  Promise.all(SNAPSHOT_CRDS.map((n) => s.get<KubeObject>(CustomResourceDefinitionType, n)));
const crdNames = async (s: EmbeddedStore) =>
  (await s.list<KubeObject>(CustomResourceDefinitionType)).items.map((c) => c.metadata!.name!);

describe('virt-operator and the VolumeSnapshot CRDs', () => {
  it('renders them marked created-if-absent and without the managed-by label; the install CRDs managed', async () => {
    const all = await rendered();
    const crdObjs = all.filter((o) => o.kind === 'CustomResourceDefinition');
    const marked = crdObjs.filter((o) => o.metadata?.labels?.[CREATED_IF_ABSENT_LABEL] === 'virt-operator');
    expect(marked.map((o) => o.metadata?.name).sort()).toEqual(SNAPSHOT_CRDS);
    for (const o of marked) expect(o.metadata?.labels?.[MANAGED_BY_LABEL]).toBeUndefined();
    const vm = crdObjs.find((o) => o.metadata?.name === 'virtualmachines.kubevirt.io')!;
    expect(vm.metadata?.labels?.[MANAGED_BY_LABEL]).toBe('virt-operator');
    expect(vm.metadata?.labels?.[CREATED_IF_ABSENT_LABEL]).toBeUndefined();
  });

  it('creates absent ones, and removal deletes the rest of the install but leaves them', async () => {
    const s = await openStore();
    const desired = await storageInstall();
    // The first pass creates the CRDs; their kind VolumeSnapshotClass is served from the second.
    const first = await applyAll(s, NS, desired);
    expect(first.created).toEqual(
      expect.arrayContaining(SNAPSHOT_CRDS.map((n) => `CustomResourceDefinition ${n}`)),
    );
    await applyAll(s, NS, desired);
    expect((await s.list(VolumeSnapshotClassType)).items).toHaveLength(1);
    for (const c of await crds(s))
      expect(c.metadata?.labels?.[CREATED_IF_ABSENT_LABEL]).toBe('virt-operator');

    const deleted = await deleteAll(s, NS);
    expect(deleted).toContain(`Deployment ${NS}/snapshot-controller`);
    expect(deleted.filter((d) => d.startsWith('CustomResourceDefinition'))).toEqual([]);
    expect((await s.list(DeploymentType, { namespace: NS })).items).toHaveLength(0);
    expect((await s.list(StorageClassType)).items).toHaveLength(0);
    expect(await crdNames(s)).toEqual(expect.arrayContaining(SNAPSHOT_CRDS));
  });

  it('neither adopts nor changes nor deletes snapshot CRDs that were there before it', async () => {
    const s = await openStore();
    for (const c of snapshotCrdObjects(crdsDir)) await s.create(CustomResourceDefinitionType, c);
    const before = await crds(s);
    const desired = await storageInstall();
    const first = await applyAll(s, NS, desired);
    expect(first.created.filter((c) => c.startsWith('CustomResourceDefinition'))).toEqual([]);
    await applyAll(s, NS, desired);
    const after = await crds(s);
    expect(after.map((c) => c.metadata?.resourceVersion)).toEqual(
      before.map((c) => c.metadata?.resourceVersion),
    );
    for (const c of after) expect(c.metadata?.labels ?? {}).toEqual({});
    await deleteAll(s, NS);
    expect(await crdNames(s)).toEqual(expect.arrayContaining(SNAPSHOT_CRDS));
  });

  it('keeps snapshot CRDs an earlier operator labelled as its own, when unwanted and at removal', async () => {
    const s = await openStore();
    for (const c of snapshotCrdObjects(crdsDir))
      await s.create(CustomResourceDefinitionType, {
        ...c,
        metadata: { ...c.metadata, labels: { [MANAGED_BY_LABEL]: 'virt-operator' } },
      });
    // A rendering without them: an earlier operator's label alone does not make them unwanted objects to delete.
    expect((await applyAll(s, NS, [])).deleted).toEqual([]);
    expect(await deleteAll(s, NS)).toEqual([]);
    expect(await crdNames(s)).toEqual(expect.arrayContaining(SNAPSHOT_CRDS));
  });
});
