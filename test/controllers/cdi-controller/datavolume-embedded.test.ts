/**
 * CDI's DataVolume and StorageProfile controllers on the embedded store: the test plays the
 * kubelet (importer pod phases and termination messages) and the provisioner (claim phase).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StorageProfile } from '../../../src/api/generated/cdi/types';
import { registerCdiControllers } from '../../../src/controllers/cdi-controller/cdi-controller';
import { requiredSpace } from '../../../src/controllers/cdi-controller/claim-spec';
import { FATAL_ERROR_ANNOTATION } from '../../../src/controllers/cdi-controller/datavolume-import';
import type { Pod } from '../../../src/controllers/common/pod';
import { storageClassObject } from '../../../src/controllers/csi-driver/objects';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { Manager } from '../../../src/controllers/runtime/manager';
import {
  DataVolumeType,
  PersistentVolumeClaimType,
  PodType,
  StorageClassType,
  StorageProfileType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { waitFor } from '../../support/wait';
import { dataVolumeHelpers, dv, NS, terminated } from './datavolume-fixtures';

const GiB = 1024 ** 3;

describe('DataVolume controller (embedded store)', () => {
  let store: EmbeddedStore;
  let manager: Manager;
  const errors: string[] = [];

  beforeEach(async () => {
    store = await EmbeddedStore.open({ types: [StorageClassType] });
    await store.create(StorageClassType, storageClassObject() as KubeObject);
    manager = new Manager({ client: store });
    registerCdiControllers({
      manager,
      recorder: manager.eventRecorder('cdi-controller'),
      importer: { image: 'kubevirt-ts/launcher:test' },
      retryDelayMs: () => 50,
      onError: (c, k, e) => errors.push(`${c} ${k}: ${e.message}`),
    });
    await manager.start();
  });
  afterEach(async () => {
    await manager.stop();
    await store.close();
    expect(errors).toEqual([]);
    errors.length = 0;
  });

  const { getDv, phase, pod, setPod, events } = dataVolumeHelpers(() => store);

  it('makes a StorageProfile per class, with the driver modes', async () => {
    const p = await waitFor('profile', async () => {
      const x = await store
        .get<StorageProfile & KubeObject>(StorageProfileType, 'kubevirt-ts-local')
        .catch(() => undefined);
      return x?.status?.claimPropertySets ? x : undefined;
    });
    expect(p.status).toEqual({
      storageClass: 'kubevirt-ts-local',
      provisioner: 'csi.kubevirt-ts.io',
      claimPropertySets: [
        { accessModes: ['ReadWriteOnce'], volumeMode: 'Filesystem' },
        { accessModes: ['ReadWriteOnce'], volumeMode: 'Block' },
      ],
      cloneStrategy: 'csi-clone',
    });
  });

  it('http import: claim from the profile with 6% overhead, importer pod, phases to Succeeded', async () => {
    await waitFor(
      'profile',
      async () =>
        (
          await store
            .get<StorageProfile & KubeObject>(StorageProfileType, 'kubevirt-ts-local')
            .catch(() => undefined)
        )?.status,
    );
    const url = 'http://10.0.0.1/disk.qcow2';
    const sum = `sha256:${'a'.repeat(64)}`;
    await store.create(
      DataVolumeType,
      dv('disk', { http: { url, checksum: sum, secretRef: 'creds', certConfigMap: 'ca' } }) as KubeObject,
    );
    const claim = await waitFor('claim', () =>
      store.get<KubeObject>(PersistentVolumeClaimType, 'disk', NS).catch(() => undefined),
    );
    const d0 = await getDv('disk');
    expect(claim.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'DataVolume', name: 'disk', uid: d0.metadata?.uid, controller: true }),
    ]);
    expect(claim.spec).toEqual({
      accessModes: ['ReadWriteOnce'],
      volumeMode: 'Filesystem',
      storageClassName: 'kubevirt-ts-local',
      resources: { requests: { storage: String(requiredSpace(GiB, 0.06)) } },
    });
    expect(requiredSpace(GiB, 0.06)).toBe(Math.ceil(GiB / 0.94));

    const p = await pod('importer-disk');
    const c = p.spec!.containers[0];
    expect(c.image).toBe('kubevirt-ts/launcher:test');
    expect(c.args).toEqual(['cdi-importer']);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env).toMatchObject({
      IMPORTER_SOURCE: 'http',
      IMPORTER_ENDPOINT: url,
      IMPORTER_CHECKSUM: sum,
      IMPORTER_IMAGE_SIZE: String(GiB),
      IMPORTER_VOLUME_MODE: 'Filesystem',
      FILESYSTEM_OVERHEAD: '0.06',
      IMPORTER_CERT_DIR: '/certs',
      IMPORTER_ACCESS_KEY_ID: { secretKeyRef: { name: 'creds', key: 'accessKeyId' } },
    });
    expect(p.spec!.volumes).toContainEqual({
      name: 'cdi-data-vol',
      persistentVolumeClaim: { claimName: 'disk' },
    });
    expect(p.spec!.volumes).toContainEqual({ name: 'cdi-cert-vol', configMap: { name: 'ca' } });
    expect(p.spec!.restartPolicy).toBe('Never');
    expect(p.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'PersistentVolumeClaim', name: 'disk' });
    await phase('disk', 'ImportScheduled');

    await store.updateStatus(PersistentVolumeClaimType, {
      ...claim,
      status: { phase: 'Bound' },
    } as KubeObject);
    await setPod('importer-disk', { phase: 'Running' });
    const running = await phase('disk', 'ImportInProgress');
    expect(running.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Bound', status: 'True', reason: 'Bound', message: 'PVC disk Bound' }),
    );
    expect(running.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Running', status: 'True' }),
    );

    await setPod('importer-disk', terminated('Succeeded', JSON.stringify({ message: 'Import Complete' }), 0));
    const done = await phase('disk', 'Succeeded');
    expect(done.status).toMatchObject({ progress: '100.0%', restartCount: 0, claimName: 'disk' });
    expect(done.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    );
    await waitFor('importer pod gone', async () =>
      (await store.get(PodType, 'importer-disk', NS).catch(() => undefined)) ? undefined : true,
    );
    const c2 = await store.get<KubeObject>(PersistentVolumeClaimType, 'disk', NS);
    expect(c2.metadata?.annotations?.['cdi.kubevirt.io/storage.pod.phase']).toBe('Succeeded');
    expect(await events('disk')).toEqual(
      expect.arrayContaining([
        'Pending: PVC disk Pending',
        'ImportScheduled: Import into disk scheduled',
        'ImportInProgress: Import into disk in progress',
        'ImportSucceeded: Successfully imported into PVC disk',
      ]),
    );
  });

  it('an unreachable URL is retried with a new pod; the error is in Running and an event', async () => {
    await store.create(
      DataVolumeType,
      dv(
        'bad',
        { http: { url: 'http://127.0.0.1:1/x.img' } },
        { accessModes: ['ReadWriteOnce'] },
      ) as KubeObject,
    );
    const first = await pod('importer-bad');
    const msg =
      'Unable to connect to http data source http://127.0.0.1:1/x.img: connect ECONNREFUSED 127.0.0.1:1';
    await setPod('importer-bad', terminated('Failed', JSON.stringify({ message: msg }), 1));
    const d = await waitFor('restart counted', async () => {
      const x = await getDv('bad');
      return (x.status?.restartCount ?? 0) >= 1 ? x : undefined;
    });
    expect(d.status?.phase).toBe('ImportScheduled');
    expect(d.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Running', status: 'False', reason: 'Error', message: msg }),
    );
    // The retry is a new pod (another uid).
    const second = await waitFor('new importer pod', async () => {
      const p = await store.get<Pod & KubeObject>(PodType, 'importer-bad', NS).catch(() => undefined);
      return p && p.metadata?.uid !== first.metadata?.uid ? p : undefined;
    });
    expect(second.status?.phase).toBeUndefined();
    expect(await events('bad')).toContain(`Error: Unable to import into PVC bad: ${msg}`);
  });

  it('a DataVolume deleted mid-import has its importer pod deleted, so its claim can go', async () => {
    await store.create(
      DataVolumeType,
      dv('gone', { http: { url: 'http://10.0.0.1/big.img' } }) as KubeObject,
    );
    const importer = await pod('importer-gone');
    await setPod('importer-gone', { phase: 'Running' });
    await phase('gone', 'ImportInProgress');
    // The API server's pvc-protection: the claim stays while a pod uses it.
    const claim = await store.get<KubeObject>(PersistentVolumeClaimType, 'gone', NS);
    await store.update(PersistentVolumeClaimType, {
      ...claim,
      metadata: { ...claim.metadata, finalizers: ['kubernetes.io/pvc-protection'] },
    });
    await store.delete(DataVolumeType, 'gone', { namespace: NS });
    await waitFor('the importer pod deleted', async () => {
      const p = await store.get<Pod & KubeObject>(PodType, 'importer-gone', NS).catch(() => undefined);
      return !p || p.metadata?.uid !== importer.metadata?.uid || p.metadata?.deletionTimestamp
        ? true
        : undefined;
    });
    // No new importer for the deleted DataVolume.
    expect(await store.get(PodType, 'importer-gone', NS).catch(() => undefined)).toBeUndefined();
  });

  it('a wrong checksum (fatal) ends in Failed, remembered on the claim', async () => {
    await store.create(
      DataVolumeType,
      dv('sum', { http: { url: 'http://10.0.0.1/d.img', checksum: `md5:${'0'.repeat(32)}` } }) as KubeObject,
    );
    await pod('importer-sum');
    const msg = "checksum mismatch: the source's md5 is 1234, the DataVolume's checksum says 0000";
    await setPod('importer-sum', terminated('Failed', JSON.stringify({ message: msg, fatal: true }), 2));
    const d = await phase('sum', 'Failed');
    expect(d.status?.restartCount).toBe(0);
    expect(d.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Running', status: 'False', reason: 'Error', message: msg }),
    );
    const claim = await store.get<KubeObject>(PersistentVolumeClaimType, 'sum', NS);
    expect(claim.metadata?.annotations?.[FATAL_ERROR_ANNOTATION]).toBe(msg);
    expect(await events('sum')).toContain(`ImportFailed: Failed to import into PVC sum: ${msg}`);
  });

  it('refuses sources not built yet, naming the field', async () => {
    await store.create(DataVolumeType, dv('s3', { s3: { url: 'https://s3.example/b/d.img' } }) as KubeObject);
    const d = await phase('s3', 'Failed');
    expect(d.status?.conditions).toContainEqual(
      expect.objectContaining({
        type: 'Ready',
        status: 'False',
        reason: 'ErrInvalidSpec',
        message: 'DataVolume/s3: spec.source.s3: S3 sources are not supported (no outside network here)',
      }),
    );
    // A registry source: only docker:// references, and no credentials (the node pulls).
    await store.create(
      DataVolumeType,
      dv('reg-bad', { registry: { url: 'oci-archive:///x.tar', secretRef: 'creds' } }) as KubeObject,
    );
    const bad = await phase('reg-bad', 'Failed');
    expect(bad.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
      'DataVolume/reg-bad: spec.source.registry.url: "oci-archive:///x.tar": only docker:// image references are supported (oci-archive:// is not); ' +
        "DataVolume/reg-bad: spec.source.registry.secretRef: registry credentials are not supported: the image is pulled by the node's container runtime (use the node's pull configuration)",
    );
    await store.create(
      DataVolumeType,
      dv('reg-ref', { registry: { url: 'docker://Quay.io/x y', pullMethod: 'skopeo' } }) as KubeObject,
    );
    const ref = await phase('reg-ref', 'Failed');
    expect(ref.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
      'DataVolume/reg-ref: spec.source.registry.url: "docker://Quay.io/x y" is not a valid image reference; ' +
        'DataVolume/reg-ref: spec.source.registry.pullMethod: "skopeo" is not pod or node',
    );
    expect((await store.list(PersistentVolumeClaimType, { namespace: NS })).items).toHaveLength(0);
  });

  it('registry import: the containerDisk image runs as an init container copying its disk to scratch', async () => {
    const url = 'docker://localhost/kubevirt-ts/tiny-guest-containerdisk:latest';
    await store.create(DataVolumeType, dv('reg', { registry: { url, pullMethod: 'node' } }) as KubeObject);
    const claim = await waitFor('claim', () =>
      store.get<KubeObject>(PersistentVolumeClaimType, 'reg', NS).catch(() => undefined),
    );
    expect(claim.metadata?.annotations).toMatchObject({
      'cdi.kubevirt.io/storage.import.source': 'registry',
      'cdi.kubevirt.io/storage.import.endpoint': url,
      'cdi.kubevirt.io/storage.import.registryImportMethod': 'node',
    });
    await store.updateStatus(PersistentVolumeClaimType, {
      ...claim,
      status: { phase: 'Bound' },
    } as KubeObject);
    const p = await pod('importer-reg');
    const init = p.spec!.initContainers as unknown as Array<Record<string, unknown>>;
    expect(init.map((c) => [c.name, c.image, c.imagePullPolicy])).toEqual([
      ['init', 'kubevirt-ts/launcher:test', 'IfNotPresent'],
      ['registry', 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest', 'IfNotPresent'],
    ]);
    expect(init[0].command).toEqual(['cp', '/bin/busybox', '/cdi-bin/busybox']);
    expect(init[1].command).toEqual([
      '/cdi-bin/busybox',
      'sh',
      '-c',
      expect.stringContaining('set -- /disk/*'),
    ]);
    expect(init[1].volumeMounts).toContainEqual({ name: 'cdi-scratch-vol', mountPath: '/scratch' });
    expect(p.spec!.containers[0].env).toEqual(
      expect.arrayContaining([
        { name: 'IMPORTER_SOURCE', value: 'registry' },
        { name: 'IMPORTER_ENDPOINT', value: url },
      ]),
    );
    // An image the node cannot get: the kubelet's reason shows while the pod waits.
    await setPod('importer-reg', {
      phase: 'Pending',
      initContainerStatuses: [
        { name: 'init', state: { terminated: { exitCode: 0 } } },
        { name: 'registry', state: { waiting: { reason: 'ErrImageNeverPull', message: 'not present' } } },
      ],
      containerStatuses: [{ name: 'importer', state: { waiting: { reason: 'PodInitializing' } } }],
    });
    await waitFor('the pull error shown', async () =>
      (await getDv('reg')).status?.conditions?.find(
        (c) => c.type === 'Running' && c.reason === 'ErrImageNeverPull' && c.message === 'not present',
      ),
    );
    // An init container that fails (an image that is no containerDisk) says why: fatal.
    const msg = 'the registry image must hold exactly one disk image file under /disk/ (a containerDisk)';
    await setPod('importer-reg', {
      phase: 'Failed',
      initContainerStatuses: [
        { name: 'init', state: { terminated: { exitCode: 0 } } },
        {
          name: 'registry',
          state: { terminated: { exitCode: 2, message: JSON.stringify({ message: msg, fatal: true }) } },
        },
      ],
      containerStatuses: [{ name: 'importer', state: { waiting: { reason: 'PodInitializing' } } }],
    });
    const d = await phase('reg', 'Failed');
    expect(d.status?.conditions?.find((c) => c.type === 'Running')?.message).toBe(msg);
  });

  it('a PVC of the same name not made for it is left alone', async () => {
    await store.create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'taken', namespace: NS },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);
    await store.create(DataVolumeType, dv('taken', { blank: {} }) as KubeObject);
    const d = await waitFor('ErrResourceExists', async () => {
      const x = await getDv('taken');
      return x.status?.conditions?.some((c) => c.reason === 'ErrResourceExists') ? x : undefined;
    });
    expect(d.status?.phase).toBe('Pending');
    expect((await store.list(PodType, { namespace: NS })).items).toHaveLength(0);
  });

  it('a PVC populated for it (a VM restore) is adopted: Succeeded, no importer', async () => {
    await store.create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: 'restored',
        namespace: NS,
        annotations: { 'cdi.kubevirt.io/storage.populatedFor': 'restored' },
      },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);
    const made = await store.create(
      DataVolumeType,
      dv('restored', { http: { url: 'http://127.0.0.1:1/disk.qcow2' } }) as KubeObject,
    );
    await phase('restored', 'Succeeded');
    const claim = await store.get<KubeObject>(PersistentVolumeClaimType, 'restored', NS);
    expect(claim.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'DataVolume',
        name: 'restored',
        uid: made.metadata?.uid,
        controller: true,
      }),
    ]);
    expect((await store.list(PodType, { namespace: NS })).items).toHaveLength(0);
  });

  it('block volumes are not grown by the overhead; a missing class is named', async () => {
    await store.create(DataVolumeType, dv('blk', { blank: {} }, { volumeMode: 'Block' }) as KubeObject);
    const claim = await waitFor('claim', () =>
      store.get<KubeObject>(PersistentVolumeClaimType, 'blk', NS).catch(() => undefined),
    );
    expect(claim.spec).toMatchObject({
      volumeMode: 'Block',
      resources: { requests: { storage: String(GiB) } },
    });
    const p = await pod('importer-blk');
    expect(p.spec!.containers[0]).toMatchObject({
      volumeDevices: [{ name: 'cdi-data-vol', devicePath: '/dev/cdi-block-volume' }],
    });

    await store.create(
      DataVolumeType,
      dv('nocls', { blank: {} }, { storageClassName: 'gold' }) as KubeObject,
    );
    const d = await waitFor('claim error', async () => {
      const x = await getDv('nocls');
      return x.status?.conditions?.some((c) => c.reason === 'ErrClaimNotValid') ? x : undefined;
    });
    expect(d.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
      'DataVolume/nocls: spec.storage.storageClassName: StorageClass "gold" not found',
    );
  });
});
