/**
 * The upload path of the CDI controllers on the embedded store (the test plays the
 * kubelet): an upload DataVolume gets its claim annotated as an upload target, the upload
 * controller makes the pod, its Service and its certificate Secret (signed by the install
 * CA for the Service's names); the pod's readiness and phase reach the claim's
 * annotations and the DataVolume's phases (UploadScheduled, UploadReady, Succeeded) and
 * events; an async failure's message reaches the Running condition; once done the pod,
 * Service and Secret are deleted. A plain PVC annotated for upload gets a pod too.
 */
import { X509Certificate } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DataVolume } from '../../../src/api/generated/cdi/types';
import { registerCdiControllers } from '../../../src/controllers/cdi-controller/cdi-controller';
import type { Pod } from '../../../src/controllers/common/pod';
import { storageClassObject } from '../../../src/controllers/csi-driver/objects';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { Manager } from '../../../src/controllers/runtime/manager';
import {
  DataVolumeType,
  EventType,
  PersistentVolumeClaimType,
  PodType,
  SecretType,
  ServiceType,
  StorageClassType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { type CertPair, createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';
import { waitFor } from '../../support/wait';

const NS = 'default';
const GiB = 1024 ** 3;

describe('upload DataVolumes (embedded store)', () => {
  let store: EmbeddedStore;
  let manager: Manager;
  let ca: CertPair;
  const errors: string[] = [];

  beforeEach(async () => {
    ca = await createCA('install-ca', new Date(), 86_400_000);
    store = await EmbeddedStore.open({ types: [StorageClassType] });
    await store.create(StorageClassType, storageClassObject() as KubeObject);
    manager = new Manager({ client: store });
    registerCdiControllers({
      manager,
      recorder: manager.eventRecorder('cdi-controller'),
      importer: { image: 'kubevirt-ts/launcher:test' },
      uploadCerts: {
        caBundle: async () => ca.cert,
        durationMs: 86_400_000,
        renewBeforeMs: 17_280_000,
        issue: (commonName, dnsNames) =>
          createLeaf(ca, { commonName, dnsNames, usage: 'server' }, new Date(), 3_600_000),
      },
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

  const get = <T>(type: typeof PodType, name: string) =>
    store.get<T & KubeObject>(type, name, NS).catch(() => undefined);
  const phase = (name: string, want: string) =>
    waitFor(`DataVolume ${name} ${want}`, async () => {
      const d = await get<DataVolume>(DataVolumeType, name);
      return d?.status?.phase === want ? d : undefined;
    });
  const setPod = async (name: string, status: Pod['status']) => {
    const p = (await get<Pod>(PodType, name))!;
    await store.updateStatus(PodType, { ...p, status } as KubeObject);
  };
  const ready = (extra: Partial<NonNullable<Pod['status']>> = {}): Pod['status'] => ({
    phase: 'Running',
    conditions: [{ type: 'Ready', status: 'True' }],
    ...extra,
  });
  const annotations = async (name: string) =>
    (await store.get<KubeObject>(PersistentVolumeClaimType, name, NS)).metadata?.annotations ?? {};

  it('DataVolume: pod, Service and Secret; UploadScheduled, UploadReady, an error, Succeeded; cleaned up', async () => {
    await store.create(DataVolumeType, {
      apiVersion: 'cdi.kubevirt.io/v1beta1',
      kind: 'DataVolume',
      metadata: { name: 'disk', namespace: NS },
      spec: { source: { upload: {} }, storage: { resources: { requests: { storage: '1Gi' } } } },
    } as KubeObject);
    const pod = await waitFor('upload pod', () => get<Pod>(PodType, 'cdi-upload-disk'));
    const ann = await annotations('disk');
    expect(ann).toMatchObject({
      'cdi.kubevirt.io/storage.upload.target': '',
      'cdi.kubevirt.io/storage.import.source': 'upload',
      'cdi.kubevirt.io/storage.uploadPodName': 'cdi-upload-disk',
      'cdi.kubevirt.io/uploadClientName': 'client.upload-server.cdi.kubevirt.io',
    });
    const c = pod.spec!.containers[0];
    expect(c.image).toBe('kubevirt-ts/launcher:test');
    expect(c.args).toEqual(['cdi-uploadserver']);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
    // The server stops when idle a fifth of a day before its certificate's end.
    const deadline = Date.parse(String(env.DEADLINE)) - Date.now();
    expect(deadline).toBeGreaterThan(0.8 * 86_400_000 - 60_000);
    expect(deadline).toBeLessThanOrEqual(0.8 * 86_400_000);
    delete env.DEADLINE;
    expect(env).toEqual({
      TLS_CERT_FILE: '/etc/cdi-upload/tls.crt',
      TLS_KEY_FILE: '/etc/cdi-upload/tls.key',
      CLIENT_CERT_FILE: '/etc/cdi-upload/ca.crt',
      CLIENT_NAME: 'client.upload-server.cdi.kubevirt.io',
      UPLOAD_VOLUME_MODE: 'Filesystem',
      FILESYSTEM_OVERHEAD: '0.06',
      UPLOAD_IMAGE_SIZE: String(GiB),
    });
    expect(pod.spec!.restartPolicy).toBe('OnFailure');
    expect(pod.spec!.volumes).toContainEqual({
      name: 'cdi-data-vol',
      persistentVolumeClaim: { claimName: 'disk' },
    });
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'PersistentVolumeClaim', name: 'disk' });
    const svc = (await get<KubeObject & { spec: Record<string, unknown> }>(ServiceType, 'cdi-upload-disk'))!;
    expect(svc.spec.selector).toEqual({ service: 'cdi-upload-disk' });
    expect(pod.metadata?.labels?.service).toBe('cdi-upload-disk');
    const secret = (await get<KubeObject & { data: Record<string, string> }>(SecretType, 'cdi-upload-disk'))!;
    const leaf = new X509Certificate(Buffer.from(secret.data['tls.crt']!, 'base64'));
    expect(leaf.subjectAltName).toContain('DNS:cdi-upload-disk.default.svc');
    expect(leaf.verify(new X509Certificate(ca.cert).publicKey)).toBe(true);
    expect(Buffer.from(secret.data['ca.crt']!, 'base64').toString()).toBe(ca.cert);
    await phase('disk', 'UploadScheduled');

    // A server that stopped at its deadline (exit 0, no Upload Complete) is replaced by a new pod.
    await setPod('cdi-upload-disk', {
      phase: 'Succeeded',
      containerStatuses: [
        {
          name: 'cdi-upload-server',
          state: { terminated: { exitCode: 0, message: '{"message":"deadline passed: no upload"}' } },
        },
      ],
    });
    await waitFor('a new upload pod', async () => {
      const p = await get<Pod>(PodType, 'cdi-upload-disk');
      return p && p.metadata?.uid !== pod.metadata?.uid ? p : undefined;
    });
    expect((await get<DataVolume>(DataVolumeType, 'disk'))?.status?.phase).toBe('UploadScheduled');
    await setPod('cdi-upload-disk', { phase: 'Running' });
    await waitFor('running, not ready', async () =>
      (await annotations('disk'))['cdi.kubevirt.io/storage.pod.phase'] === 'Running' ? true : undefined,
    );
    expect((await get<DataVolume>(DataVolumeType, 'disk'))?.status?.phase).toBe('UploadScheduled');
    await setPod('cdi-upload-disk', ready());
    const r = await phase('disk', 'UploadReady');
    expect((await annotations('disk'))['cdi.kubevirt.io/storage.pod.ready']).toBe('true');
    // The pod's certificate Secret is still there (a reconcile that did not yet see the pod
    // in its cache once deleted it: the cluster test's pod waited for it forever).
    expect(await get(SecretType, 'cdi-upload-disk')).toBeDefined();
    expect(r.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Running', status: 'True', reason: 'Pod is running' }),
    );
    // An async upload failed: the container restarted with its message.
    await setPod(
      'cdi-upload-disk',
      ready({
        containerStatuses: [
          {
            name: 'cdi-upload-server',
            restartCount: 1,
            state: { running: {} },
            lastState: {
              terminated: { exitCode: 1, message: JSON.stringify({ message: 'qemu-img: broken' }) },
            },
          },
        ],
      }),
    );
    await waitFor('error in Running', async () => {
      const d = await get<DataVolume>(DataVolumeType, 'disk');
      return d?.status?.conditions?.find((x) => x.type === 'Running' && x.message === 'qemu-img: broken');
    });
    await setPod('cdi-upload-disk', {
      phase: 'Succeeded',
      containerStatuses: [
        {
          name: 'cdi-upload-server',
          state: { terminated: { exitCode: 0, message: '{"message":"Upload Complete"}' } },
        },
      ],
    });
    const done = await phase('disk', 'Succeeded');
    expect(done.status).toMatchObject({ progress: '100.0%' });
    expect(done.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    );
    await waitFor('pod, Service and Secret gone', async () => {
      const left = [
        await get(PodType, 'cdi-upload-disk'),
        await get(ServiceType, 'cdi-upload-disk'),
        await get(SecretType, 'cdi-upload-disk'),
      ];
      return left.every((x) => x === undefined) ? true : undefined;
    });
    expect((await annotations('disk'))['cdi.kubevirt.io/storage.pod.phase']).toBe('Succeeded');
    const events = (await store.list(EventType, { namespace: NS })).items
      .filter((e) => (e as { involvedObject?: { kind?: string } }).involvedObject?.kind === 'DataVolume')
      .map((e) => `${(e as { reason?: string }).reason}: ${(e as { message?: string }).message}`);
    expect(events).toEqual(
      expect.arrayContaining([
        'UploadScheduled: Upload into disk scheduled',
        'UploadReady: Upload into disk ready',
        'UploadSucceeded: Successfully uploaded into disk',
      ]),
    );
  });

  it('a PVC annotated for upload gets a pod (no size: the volume decides); others none', async () => {
    const claim = (name: string, annotations: Record<string, string>) =>
      store.create(PersistentVolumeClaimType, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name, namespace: NS, annotations },
        spec: {
          accessModes: ['ReadWriteOnce'],
          volumeMode: 'Block',
          resources: { requests: { storage: '1Gi' } },
        },
      } as KubeObject);
    await claim('plain', {});
    await claim('target', { 'cdi.kubevirt.io/storage.upload.target': '' });
    const pod = await waitFor('upload pod', () => get<Pod>(PodType, 'cdi-upload-target'));
    const c = pod.spec!.containers[0] as {
      env?: Array<{ name: string; value?: string }>;
      volumeDevices?: unknown;
    };
    expect(c.env?.find((e) => e.name === 'UPLOAD_IMAGE_SIZE')).toBeUndefined();
    expect(c.env?.find((e) => e.name === 'UPLOAD_VOLUME_MODE')?.value).toBe('Block');
    expect(c.volumeDevices).toEqual([{ name: 'cdi-data-vol', devicePath: '/dev/cdi-block-volume' }]);
    expect(pod.spec!.securityContext).toEqual({ runAsUser: 0 });
    expect(await get(PodType, 'cdi-upload-plain')).toBeUndefined();
  });

  // Without an issuer no upload controller runs; the reason is the caller's when it gives one
  // (local mode without a pod network), else the default.
  it.each([
    [
      undefined,
      /^DataVolume\/up: spec\.source\.upload: upload sources need the upload controller and cdi-uploadproxy, which do not run here/,
    ],
    ['no pod network here', /^DataVolume\/up: spec\.source\.upload: no pod network here$/],
  ])(
    'without the upload controller an upload DataVolume is refused, naming the field (reason %s)',
    async (reason, want) => {
      const s2 = await EmbeddedStore.open({ types: [StorageClassType] });
      const m2 = new Manager({ client: s2 });
      registerCdiControllers({
        manager: m2,
        recorder: m2.eventRecorder('cdi'),
        importer: { image: 'i' },
        uploadsRefused: reason,
      });
      await m2.start();
      try {
        await s2.create(DataVolumeType, {
          apiVersion: 'cdi.kubevirt.io/v1beta1',
          kind: 'DataVolume',
          metadata: { name: 'up', namespace: NS },
          spec: { source: { upload: {} }, storage: { resources: { requests: { storage: '1Gi' } } } },
        } as KubeObject);
        const d = await waitFor('Failed', async () => {
          const x = await s2.get<DataVolume & KubeObject>(DataVolumeType, 'up', NS);
          return x.status?.phase === 'Failed' ? x : undefined;
        });
        expect(d.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
          reason: 'ErrInvalidSpec',
          message: expect.stringMatching(want),
        });
        expect(await s2.get(PersistentVolumeClaimType, 'up', NS).catch(() => undefined)).toBeUndefined();
      } finally {
        await m2.stop();
        await s2.close();
      }
    },
  );
});
