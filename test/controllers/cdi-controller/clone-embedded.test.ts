/**
 * The DataVolume clone sources (`source.pvc`, `source.snapshot`, `sourceRef` to a
 * DataSource) and the DataSource controller on the embedded store; the test plays the
 * CSI provisioner (claim phases), the snapshotter (readyToUse) and the kubelet (pods).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DataSource, DataVolume, StorageProfile } from '../../../src/api/generated/cdi/types';
import { registerCdiControllers } from '../../../src/controllers/cdi-controller/cdi-controller';
import { storageClassObject } from '../../../src/controllers/csi-driver/objects';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { Manager } from '../../../src/controllers/runtime/manager';
import {
  DataSourceType,
  DataVolumeType,
  PersistentVolumeClaimType,
  PodType,
  StorageClassType,
  StorageProfileType,
} from '../../../src/controllers/runtime/resources';
import { VolumeSnapshotType } from '../../../src/controllers/runtime/storage-resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { waitFor } from '../../support/wait';
import { CLASS, cloneDv, cloneHelpers, ready, SOURCE_BYTES, SOURCE_CAPACITY } from './clone-fixtures';
import { dataVolumeHelpers, NS } from './datavolume-fixtures';

describe('DataVolume clone sources and DataSources (embedded store)', () => {
  let store: EmbeddedStore;
  let manager: Manager;
  const errors: string[] = [];

  beforeEach(async () => {
    store = await EmbeddedStore.open({ types: [StorageClassType, VolumeSnapshotType] });
    await store.create(StorageClassType, storageClassObject() as KubeObject);
    await store.create(
      StorageClassType,
      storageClassObject({ name: 'other', defaultVirtClass: false }) as KubeObject,
    );
    manager = new Manager({ client: store });
    registerCdiControllers({
      manager,
      recorder: manager.eventRecorder('cdi-controller'),
      importer: { image: 'kubevirt-ts/launcher:test' },
      snapshots: true,
      cloneSourcePollMs: 50,
      onError: (c, k, e) => errors.push(`${c} ${k}: ${e.message}`),
    });
    await manager.start();
    await waitFor(
      'profile',
      async () =>
        (await store.get<StorageProfile & KubeObject>(StorageProfileType, CLASS).catch(() => undefined))
          ?.status?.cloneStrategy,
    );
  });
  afterEach(async () => {
    await manager.stop();
    await store.close();
    expect(errors).toEqual([]);
    errors.length = 0;
  });

  const { getDv, phase, events } = dataVolumeHelpers(() => store);
  const { claim, bind, sourceClaim, snapshot } = cloneHelpers(() => store);

  it('source.pvc: the claim clones the source (same size, node, dataSource), phases to Succeeded', async () => {
    await sourceClaim('src');
    await store.create(
      DataVolumeType,
      cloneDv('copy', { source: { pvc: { namespace: NS, name: 'src' } } }) as KubeObject,
    );
    const c = await claim('copy');
    const d0 = await getDv('copy');
    expect(c.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      volumeMode: 'Filesystem',
      storageClassName: CLASS,
      // No size asked: the source's capacity, with no second filesystem overhead on top.
      resources: { requests: { storage: SOURCE_CAPACITY } },
      dataSource: { kind: 'PersistentVolumeClaim', name: 'src' },
    });
    expect(c.metadata?.annotations).toMatchObject({
      'cdi.kubevirt.io/cloneType': 'csi-clone',
      'cdi.kubevirt.io/createdForDataVolume': d0.metadata?.uid,
      // WaitForFirstConsumer: the clone goes to its source's node without waiting for a pod.
      'volume.kubernetes.io/selected-node': 'node-1',
    });
    expect(c.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'DataVolume',
      name: 'copy',
      controller: true,
    });
    const going = await phase('copy', 'CSICloneInProgress');
    expect(going.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Running', status: 'True', reason: 'CSICloneInProgress' }),
    );
    await bind('copy', SOURCE_BYTES);
    const done = await phase('copy', 'Succeeded');
    expect(done.status).toMatchObject({ progress: '100.0%', claimName: 'copy' });
    expect(ready(done)?.status).toBe('True');
    expect(await events('copy')).toEqual(
      expect.arrayContaining([
        'CloneScheduled: Cloning from default/src into default/copy scheduled',
        'CSICloneInProgress: CSI Volume clone in progress (for pvc default/src)',
        'CloneSucceeded: Successfully cloned from default/src into default/copy',
      ]),
    );
    // Asked for the source's own size (1Gi): CDI compares the claims' requests, not the
    // capacity the driver rounded up, so this is no "smaller than the source".
    await store.create(
      DataVolumeType,
      cloneDv(
        'sized',
        { source: { pvc: { namespace: NS, name: 'src' } } },
        {
          resources: { requests: { storage: '1Gi' } },
        },
      ) as KubeObject,
    );
    expect((await claim('sized')).spec?.resources).toEqual({ requests: { storage: SOURCE_BYTES } });
  });

  it('waits for a missing source, a running source import and a pod using the source read-write', async () => {
    await store.create(
      DataVolumeType,
      cloneDv('late', { source: { pvc: { namespace: NS, name: 'src' } } }) as KubeObject,
    );
    const missing = await waitFor('CloneWithoutSource', async () => {
      const d = await getDv('late');
      return ready(d)?.reason === 'CloneWithoutSource' ? d : undefined;
    });
    expect(missing.status?.phase).toBe('Pending');
    expect(ready(missing)?.message).toBe("The source pvc src doesn't exist");
    // The source is the claim of a DataVolume still importing: not populated yet.
    await store.create(DataVolumeType, {
      apiVersion: 'cdi.kubevirt.io/v1beta1',
      kind: 'DataVolume',
      metadata: { name: 'src', namespace: NS },
      spec: { source: { blank: {} }, storage: { resources: { requests: { storage: '1Gi' } } } },
    } as KubeObject);
    await bind('src', SOURCE_BYTES);
    const waiting = await waitFor('not populated', async () => {
      const d = await getDv('late');
      return ready(d)?.message?.includes('not fully populated') ? d : undefined;
    });
    expect(waiting.status?.phase).toBe('CloneScheduled');
    // A running pod using it read-write (a VM): CloneSourceInUse until it stops.
    await store.create(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'virt-launcher-vm', namespace: NS },
      spec: {
        containers: [{ name: 'c', image: 'x', volumeMounts: [{ name: 'd', mountPath: '/d' }] }],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'src' } }],
      },
    } as KubeObject);
    // The import finishes (as the importer leaves it: the pod phase on the claim).
    const sc = await claim('src');
    await store.patch(
      PersistentVolumeClaimType,
      'src',
      { metadata: { annotations: { 'cdi.kubevirt.io/storage.pod.phase': 'Succeeded' } } },
      { namespace: NS, type: 'merge' } as never,
    );
    expect(sc.metadata?.name).toBe('src');
    await phase('src', 'Succeeded');
    const inUse = await waitFor('in use', async () => {
      const d = await getDv('late');
      return ready(d)?.reason === 'CloneSourceInUse' ? d : undefined;
    });
    expect(inUse.status?.phase).toBe('CloneScheduled');
    expect(ready(inUse)?.message).toBe('pod default/virt-launcher-vm using PersistentVolumeClaim src');
    expect(await store.get(PersistentVolumeClaimType, 'late', NS).catch(() => undefined)).toBeUndefined();
    // A reader (every mount read-only) does not hold the clone, as CDI allows read-only users.
    await store.create(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'reader', namespace: NS },
      spec: {
        containers: [
          { name: 'c', image: 'x', volumeMounts: [{ name: 'd', mountPath: '/d', readOnly: true }] },
        ],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'src' } }],
      },
    } as KubeObject);
    await store.delete(PodType, 'virt-launcher-vm', { namespace: NS });
    expect((await claim('late')).spec?.dataSource).toEqual({ kind: 'PersistentVolumeClaim', name: 'src' });
  });

  it('refuses what a CSI clone cannot do, naming the field, and makes no claim', async () => {
    await sourceClaim('src');
    await sourceClaim('blk', { volumeMode: 'Block' });
    const cases: [string, Record<string, unknown>, Record<string, unknown>, string, string][] = [
      [
        'small',
        { source: { pvc: { namespace: NS, name: 'src' } } },
        { volumeMode: 'Filesystem', resources: { requests: { storage: '100Mi' } } },
        'CloneValidationFailed',
        'spec.storage.resources.requests.storage: target resources requests storage size is smaller than the source',
      ],
      [
        'cls',
        { source: { pvc: { namespace: NS, name: 'src' } } },
        { storageClassName: 'other' },
        'IncompatibleProvisioners',
        'spec.storage.storageClassName: the source PVC default/src is on StorageClass "kubevirt-ts-local" and the clone on "other"',
      ],
      [
        'mode',
        { source: { pvc: { namespace: NS, name: 'blk' } } },
        { volumeMode: 'Filesystem' },
        'IncompatibleVolumeModes',
        'spec.storage.volumeMode: the source PVC default/blk is Block and the clone Filesystem',
      ],
      [
        'xns',
        { source: { pvc: { namespace: 'other-ns', name: 'src' } } },
        {},
        'ErrInvalidSpec',
        'spec.source.pvc.namespace: cloning from namespace other-ns into default is not supported',
      ],
      [
        'kind',
        { sourceRef: { kind: 'PVC', name: 'src' } },
        {},
        'ErrInvalidSpec',
        'spec.sourceRef.kind: Unsupported sourceRef kind "PVC": only DataSource',
      ],
    ];
    for (const [name, spec, storage] of cases)
      await store.create(DataVolumeType, cloneDv(name, spec, storage) as KubeObject);
    for (const [name, , , reason, message] of cases) {
      const d = await phase(name, 'Failed');
      expect(ready(d)?.reason, name).toBe(reason);
      expect(ready(d)?.message, name).toContain(`DataVolume/${name}: ${message}`);
    }
    // A profile asking for a host-assisted copy: refused, not silently cloned by CSI.
    const p = await store.get<StorageProfile & KubeObject>(StorageProfileType, CLASS);
    await store.update(StorageProfileType, { ...p, spec: { cloneStrategy: 'copy' } } as KubeObject);
    await waitFor(
      'profile copy',
      async () =>
        (await store.get<StorageProfile & KubeObject>(StorageProfileType, CLASS)).status?.cloneStrategy ===
        'copy',
    );
    await store.create(
      DataVolumeType,
      cloneDv('copy', { source: { pvc: { namespace: NS, name: 'src' } } }) as KubeObject,
    );
    expect(ready(await phase('copy', 'Failed'))?.message).toContain(
      'StorageProfile kubevirt-ts-local cloneStrategy copy is not supported',
    );
    const claims = (await store.list(PersistentVolumeClaimType, { namespace: NS })).items.map(
      (c) => c.metadata?.name,
    );
    expect(claims.sort()).toEqual(['blk', 'src']);
  });

  it('source.snapshot: waits for readyToUse, then a claim restored from it', async () => {
    await sourceClaim('src');
    await snapshot('snap', false);
    await store.create(
      DataVolumeType,
      cloneDv('restored', { source: { snapshot: { namespace: NS, name: 'snap' } } }) as KubeObject,
    );
    const waiting = await phase('restored', 'CloneScheduled');
    expect(ready(waiting)?.message).toBe(
      'Cloning from snapshot default/snap scheduled: the snapshot is not ready to use',
    );
    await snapshot('snap', true);
    const c = await claim('restored');
    expect(c.spec?.dataSource).toEqual({
      apiGroup: 'snapshot.storage.k8s.io',
      kind: 'VolumeSnapshot',
      name: 'snap',
    });
    expect(c.spec?.resources).toEqual({ requests: { storage: SOURCE_BYTES } });
    expect(c.metadata?.annotations?.['cdi.kubevirt.io/cloneType']).toBe('snapshot');
    await phase('restored', 'CloneFromSnapshotSourceInProgress');
    await bind('restored', SOURCE_BYTES);
    await phase('restored', 'Succeeded');
    expect(await events('restored')).toContain(
      'CloneSucceeded: Successfully cloned from default/snap into default/restored',
    );
  });

  it('sourceRef: a DataSource resolves to its claim; its Ready condition follows the source', async () => {
    const ds = (name: string, source: Record<string, unknown>) =>
      store.create(DataSourceType, {
        apiVersion: 'cdi.kubevirt.io/v1beta1',
        kind: 'DataSource',
        metadata: { name, namespace: NS },
        spec: { source },
      } as KubeObject);
    const dsReady = (name: string, status: string, reason: string) =>
      waitFor(`DataSource ${name} ${reason}`, async () => {
        const d = await store.get<DataSource & KubeObject>(DataSourceType, name, NS);
        const c = d.status?.conditions?.find((x) => x.type === 'Ready');
        return c?.status === status && c.reason === reason ? d : undefined;
      });
    await ds('golden', { pvc: { name: 'src' } });
    expect((await dsReady('golden', 'False', 'NotFound')).status?.source).toEqual({});
    await store.create(
      DataVolumeType,
      cloneDv('from-ds', { sourceRef: { kind: 'DataSource', name: 'golden' } }) as KubeObject,
    );
    await waitFor(
      'CloneWithoutSource',
      async () => ready(await getDv('from-ds'))?.reason === 'CloneWithoutSource',
    );
    await sourceClaim('src');
    const r = await dsReady('golden', 'True', 'Ready');
    expect(r.status?.source).toEqual({ pvc: { namespace: NS, name: 'src' } });
    expect(r.status?.conditions?.[0].message).toBe('DataSource is ready to be consumed');
    expect((await claim('from-ds')).spec?.dataSource).toEqual({ kind: 'PersistentVolumeClaim', name: 'src' });
    await bind('from-ds', SOURCE_BYTES);
    await phase('from-ds', 'Succeeded');
    // Chains: one step to another DataSource, never to itself; a snapshot not ready.
    await ds('alias', { dataSource: { namespace: NS, name: 'golden' } });
    expect((await dsReady('alias', 'True', 'Ready')).status?.source).toEqual({
      pvc: { namespace: NS, name: 'src' },
    });
    await ds('self', { dataSource: { namespace: NS, name: 'self' } });
    expect((await dsReady('self', 'False', 'SelfReference')).status?.conditions?.[0].message).toBe(
      'DataSource cannot self-reference',
    );
    await ds('deep', { dataSource: { namespace: NS, name: 'alias' } });
    await dsReady('deep', 'False', 'MaxReferenceDepthReached');
    await snapshot('snap', false);
    await ds('snapds', { snapshot: { namespace: NS, name: 'snap' } });
    await dsReady('snapds', 'False', 'SnapshotNotReady');
    await snapshot('snap', true);
    await dsReady('snapds', 'True', 'Ready');
    // A DataSource naming a claim in another namespace: that clone is refused.
    await ds('far', { pvc: { namespace: 'elsewhere', name: 'x' } });
    await store.create(
      DataVolumeType,
      cloneDv('far-dv', { sourceRef: { kind: 'DataSource', name: 'far' } }) as KubeObject,
    );
    expect(ready(await phase('far-dv', 'Failed'))?.message).toBe(
      "DataVolume/far-dv: DataSource default/far: cloning from namespace elsewhere into default is not supported: the source must be in the DataVolume's namespace",
    );
  });
});

describe('clone sources where no provisioner clones (local mode)', () => {
  it('fail the DataVolume, naming the field, and make no claim', async () => {
    const store = await EmbeddedStore.open({ types: [StorageClassType] });
    const manager = new Manager({ client: store });
    registerCdiControllers({
      manager,
      recorder: manager.eventRecorder('cdi-controller'),
      importer: { image: 'kubevirt-ts/launcher:test' },
      clones: false,
    });
    await manager.start();
    try {
      await store.create(
        DataVolumeType,
        cloneDv('copy', { source: { pvc: { namespace: NS, name: 'src' } } }) as KubeObject,
      );
      const d = await waitFor('Failed', async () => {
        const x = await store.get<DataVolume & KubeObject>(DataVolumeType, 'copy', NS);
        return x.status?.phase === 'Failed' ? x : undefined;
      });
      expect(d.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
        "DataVolume/copy: spec.source: clone sources need a CSI provisioner that clones, which does not run here (local mode without its CSI pool: see `up`'s storage line)",
      );
      expect((await store.list(PersistentVolumeClaimType, { namespace: NS })).items).toHaveLength(0);
    } finally {
      await manager.stop();
      await store.close();
    }
  });
});
