import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimNamesNoClass, defaultStorageClass } from '../../../src/controllers/local/default-storage-class';
import {
  type ClaimObject,
  chooseVolume,
  PvBinder,
  type VolumeObject,
  volumeFits,
} from '../../../src/controllers/local/pv-binder';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import {
  PersistentVolumeClaimType,
  PersistentVolumeType,
  StorageClassType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { waitFor } from '../../support/wait';

const pv = (name: string, storage: string, extra: VolumeObject['spec'] = {}): VolumeObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    capacity: { storage },
    accessModes: ['ReadWriteOnce'],
    hostPath: { path: `/srv/${name}` },
    ...extra,
  } as VolumeObject['spec'],
});
const pvc = (name: string, storage: string, extra: ClaimObject['spec'] = {}): ClaimObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, ...extra },
});

describe('volume matching', () => {
  it('fits on class, mode, access modes and size', () => {
    expect(volumeFits(pv('a', '1Gi'), pvc('c', '512Mi'))).toBe(true);
    expect(volumeFits(pv('a', '1Gi'), pvc('c', '2Gi'))).toBe(false);
    expect(volumeFits(pv('a', '1Gi', { storageClassName: 'fast' }), pvc('c', '1Gi'))).toBe(false);
    expect(volumeFits(pv('a', '1Gi', { volumeMode: 'Block' }), pvc('c', '1Gi'))).toBe(false);
    expect(volumeFits(pv('a', '1Gi'), pvc('c', '1Gi', { accessModes: ['ReadWriteMany'] }))).toBe(false);
    expect(volumeFits(pv('a', 'lots'), pvc('c', '1Gi'))).toBe(false);
  });

  it('chooses the smallest free volume that fits, or the named one', () => {
    const vols = [pv('big', '10Gi'), pv('small', '1Gi'), pv('tiny', '100Mi')];
    expect(chooseVolume(pvc('c', '500Mi'), vols)?.metadata?.name).toBe('small');
    expect(chooseVolume(pvc('c', '500Mi', { volumeName: 'big' }), vols)?.metadata?.name).toBe('big');
    const taken = {
      ...pv('small', '1Gi'),
      spec: { ...pv('small', '1Gi').spec, claimRef: { namespace: 'default', name: 'other', uid: 'x' } },
    };
    expect(chooseVolume(pvc('c', '500Mi'), [taken, pv('big', '10Gi')])?.metadata?.name).toBe('big');
    expect(chooseVolume(pvc('c', '500Mi', { volumeName: 'small' }), [taken])).toBeUndefined();
  });
});

const sc = (name: string, created: string, annotation?: string): KubeObject =>
  ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: {
      name,
      creationTimestamp: created,
      ...(annotation ? { annotations: { [annotation]: 'true' } } : {}),
    },
    provisioner: 'example.io/x',
  }) as KubeObject;

describe('the default StorageClass (Kubernetes GetDefaultClass)', () => {
  const GA = 'storageclass.kubernetes.io/is-default-class';
  const BETA = 'storageclass.beta.kubernetes.io/is-default-class';
  it('is the newest class annotated default, then the first by name; none without one', () => {
    const plain = sc('plain', '2026-12-05T09:00:00Z');
    const older = sc('older', '2026-12-01T00:00:00Z', GA);
    const newer = sc('newer', '2026-12-02T00:00:00Z', BETA);
    expect(defaultStorageClass([plain, older, newer])?.metadata?.name).toBe('newer');
    expect(defaultStorageClass([plain, older])?.metadata?.name).toBe('older');
    const twin = sc('a-twin', '2026-12-02T00:00:00Z', GA);
    expect(defaultStorageClass([newer, twin])?.metadata?.name).toBe('a-twin');
    expect(defaultStorageClass([plain])).toBeUndefined();
  });

  it('goes only to claims that name no class: an empty class and the beta annotation are names', () => {
    expect(claimNamesNoClass(pvc('c', '1Gi'))).toBe(true);
    expect(claimNamesNoClass(pvc('c', '1Gi', { storageClassName: '' }))).toBe(false);
    expect(
      claimNamesNoClass({
        ...pvc('c', '1Gi'),
        metadata: { annotations: { 'volume.beta.kubernetes.io/storage-class': 'x' } },
      }),
    ).toBe(false);
  });
});

describe('PvBinder on the embedded store', () => {
  let store: EmbeddedStore;
  let binder: PvBinder;
  beforeEach(async () => {
    store = await EmbeddedStore.open();
    binder = new PvBinder({ client: store });
    await binder.start();
  });
  afterEach(async () => {
    await binder.stop();
    await store.close?.();
  });

  const claim = (name: string) =>
    store.get<ClaimObject & KubeObject>(PersistentVolumeClaimType, name, 'default');
  const volume = (name: string) => store.get<VolumeObject & KubeObject>(PersistentVolumeType, name);
  const bound = (name: string) =>
    waitFor(
      `claim ${name} Bound`,
      async () => {
        const c = await claim(name);
        return c.status?.phase === 'Bound' ? c : undefined;
      },
      10_000,
    );

  it('binds a claim to the volume that fits, both ways, with capacity and access modes', async () => {
    await store.create(PersistentVolumeType, pv('pv-small', '1Gi') as KubeObject);
    await store.create(PersistentVolumeType, pv('pv-big', '8Gi') as KubeObject);
    const created = await store.create(PersistentVolumeClaimType, pvc('disk', '600Mi') as KubeObject);
    const c = await bound('disk');
    expect(c.spec?.volumeName).toBe('pv-small');
    expect(c.status).toMatchObject({
      phase: 'Bound',
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
    });
    const v = await volume('pv-small');
    expect(v.spec?.claimRef).toMatchObject({
      namespace: 'default',
      name: 'disk',
      uid: created.metadata?.uid,
    });
    expect(v.status?.phase).toBe('Bound');
    expect((await volume('pv-big')).spec?.claimRef).toBeUndefined();
  });

  it('leaves a claim Pending until a volume that fits appears, and never gives one volume to two claims', async () => {
    await store.create(PersistentVolumeClaimType, pvc('first', '1Gi') as KubeObject);
    await store.create(PersistentVolumeClaimType, pvc('second', '1Gi') as KubeObject);
    await new Promise((r) => setTimeout(r, 200));
    expect((await claim('first')).status?.phase).not.toBe('Bound');
    await store.create(PersistentVolumeType, pv('only', '2Gi') as KubeObject);
    const winner = await waitFor(
      'one claim Bound',
      async () => {
        const [a, b] = [await claim('first'), await claim('second')];
        return a.status?.phase === 'Bound' ? a : b.status?.phase === 'Bound' ? b : undefined;
      },
      10_000,
    );
    await new Promise((r) => setTimeout(r, 200));
    const other = await claim(winner.metadata?.name === 'first' ? 'second' : 'first');
    expect(other.status?.phase).not.toBe('Bound');
    expect((await volume('only')).spec?.claimRef?.name).toBe(winner.metadata?.name);
    await store.create(PersistentVolumeType, pv('another', '2Gi') as KubeObject);
    expect((await bound(other.metadata?.name ?? '')).spec?.volumeName).toBe('another');
  });

  it('binds a claim that names its volume (pre-bound)', async () => {
    await store.create(PersistentVolumeType, pv('pv-a', '1Gi') as KubeObject);
    await store.create(PersistentVolumeType, pv('pv-b', '1Gi') as KubeObject);
    await store.create(PersistentVolumeClaimType, pvc('named', '1Gi', { volumeName: 'pv-b' }) as KubeObject);
    expect((await bound('named')).spec?.volumeName).toBe('pv-b');
    expect((await volume('pv-b')).spec?.claimRef?.name).toBe('named');
  });

  it('gives a claim naming no class the default class when no class-less volume fits, as the PV controller does', async () => {
    // No default class yet: the claim waits, class-less.
    await store.create(PersistentVolumeClaimType, pvc('later', '1Gi') as KubeObject);
    await store.create(
      PersistentVolumeClaimType,
      pvc('empty', '5Gi', { storageClassName: '' }) as KubeObject,
    );
    await store.create(StorageClassType, sc('not-default', '2026-12-05T00:00:00Z'));
    await new Promise((r) => setTimeout(r, 200));
    expect((await claim('later')).spec?.storageClassName).toBeUndefined();
    // A default class appears: the waiting claim gets it; the one asking for "" does not.
    await store.create(
      StorageClassType,
      sc('pool', '2026-12-05T00:00:00Z', 'storageclass.kubernetes.io/is-default-class'),
    );
    const assigned = await waitFor(
      'the default class on the claim',
      async () => {
        const c = await claim('later');
        return c.spec?.storageClassName ? c : undefined;
      },
      10_000,
    );
    expect(assigned.spec?.storageClassName).toBe('pool');
    expect(assigned.status?.phase).not.toBe('Bound');
    expect((await claim('empty')).spec?.storageClassName).toBe('');
    // A class-less volume that fits wins over the default class (it is looked for first).
    await store.create(PersistentVolumeType, pv('handmade', '1Gi') as KubeObject);
    await store.create(PersistentVolumeClaimType, pvc('static', '1Gi') as KubeObject);
    const c = await bound('static');
    expect(c.spec?.volumeName).toBe('handmade');
    expect(c.spec?.storageClassName).toBeUndefined();
  });
});
