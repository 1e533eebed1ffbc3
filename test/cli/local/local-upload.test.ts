/**
 * Local mode's upload wiring (src/cli/local/local-upload.ts, the token route of
 * local-api.ts) on an embedded store: the CDIConfig override `up` sets (made when missing,
 * its own loopback URL replaced at the next start, someone else's kept), the resolver
 * that finds an upload pod by the claim's name and dials into its network namespace
 * (503 while the pod or its network is missing), and UploadTokenRequests answered by the
 * local API with tokens the signer's certificate verifies (refused when no proxy runs).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CDIConfig } from '../../../src/api/generated/cdi/types';
import { serveLocalApi } from '../../../src/cli/local/local-api';
import { LocalClient } from '../../../src/cli/local/local-client';
import type { LocalNode } from '../../../src/cli/local/local-node';
import { ensureLocalPki, type LocalPki } from '../../../src/cli/local/local-pki';
import { podResolver, setUploadProxyOverride } from '../../../src/cli/local/local-upload';
import { statePaths } from '../../../src/cli/local/state-dir';
import { ProxyError } from '../../../src/controllers/cdi-uploadproxy/upload-proxy';
import { verifyUploadToken } from '../../../src/controllers/common/upload-token';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { CDIConfigType, PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';

let store: EmbeddedStore;
let dir: string;
let pki: LocalPki;
beforeAll(async () => {
  store = await EmbeddedStore.open();
  dir = mkdtempSync(join(tmpdir(), 'kvts-local-upload-'));
  pki = await ensureLocalPki(join(dir, 'pki'));
}, 30_000);
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const override = async () =>
  (await store.get<CDIConfig & KubeObject>(CDIConfigType, 'config')).spec?.uploadProxyURLOverride;

describe('the CDIConfig override', () => {
  it("is made with the CDIConfig, replaced when it was up's, kept when someone else set it", async () => {
    expect(await setUploadProxyOverride(store, 'https://127.0.0.1:40001')).toBe('https://127.0.0.1:40001');
    expect(await override()).toBe('https://127.0.0.1:40001');
    // The next start, on another port.
    expect(await setUploadProxyOverride(store, 'https://127.0.0.1:40002')).toBe('https://127.0.0.1:40002');
    expect(await override()).toBe('https://127.0.0.1:40002');
    const cfg = await store.get<CDIConfig & KubeObject>(CDIConfigType, 'config');
    await store.update(CDIConfigType, {
      ...cfg,
      spec: { ...cfg.spec, uploadProxyURLOverride: 'https://up.example:443' },
    });
    expect(await setUploadProxyOverride(store, 'https://127.0.0.1:40003')).toBe('https://up.example:443');
    expect(await override()).toBe('https://up.example:443');
  });
});

describe('the upload pod resolver', () => {
  it('503 until the pod and its network exist, then the pod IP, the Service name and a dialer', async () => {
    const nets = new Map<string, { netns: string; ip: string }>();
    const resolve = podResolver(store, (uid) => nets.get(uid));
    const refused = (e: unknown) => {
      expect(e).toBeInstanceOf(ProxyError);
      return [(e as ProxyError).code, (e as Error).message];
    };
    expect(await resolve('default', 'disk').catch(refused)).toEqual([
      503,
      'the upload pod default/cdi-upload-disk does not exist yet',
    ]);
    const pod = await store.create(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'cdi-upload-disk', namespace: 'default' },
    } as KubeObject);
    expect(await resolve('default', 'disk').catch(refused)).toEqual([
      503,
      'the upload pod default/cdi-upload-disk has no network namespace yet',
    ]);
    nets.set(pod.metadata?.uid ?? '', { netns: '/run/netns/kvts-x', ip: '10.244.77.9' });
    const at = await resolve('default', 'disk');
    expect(at).toMatchObject({ host: '10.244.77.9', port: 8443, servername: 'cdi-upload-disk.default.svc' });
    expect(typeof at.connect).toBe('function');
  });
});

describe('UploadTokenRequests through the local API', () => {
  it('answers with a token for the PVC the signer certificate verifies; 503 without a proxy', async () => {
    const paths = statePaths(join(dir, 'state'));
    mkdirSync(paths.root, { recursive: true });
    // LocalClient wants both sockets; the store's is not used here.
    writeFileSync(paths.storeSocket, '');
    const node = { nodeName: 'local', pki, upload: {}, store, o: { paths } } as unknown as LocalNode;
    const api = await serveLocalApi(node, paths.apiSocket);
    const client = new LocalClient(paths);
    try {
      const token = await client.uploadToken('ns1', 'disk-a');
      const claims = verifyUploadToken(token, readFileSync(pki.files.signerCert, 'utf8'));
      expect(claims).toMatchObject({ name: 'disk-a', namespace: 'ns1', operation: 'Upload' });
      (node as { upload?: unknown }).upload = undefined;
      await expect(client.uploadToken('ns1', 'disk-a')).rejects.toThrow(
        'uploads are not served: local mode runs no upload proxy without a pod network (--no-pod-network)',
      );
    } finally {
      client.close();
      await api.close();
    }
  });
});
