/**
 * Upload tokens and the upload proxy over loopback TLS, in front of a real upload server
 * (qemu-img), with the claims in the embedded store: a token signed by the signer's key
 * verifies with its certificate and names the PVC; a tampered, expired, foreign-signed or
 * `alg: none` token is refused. Through the proxy: no token 400, a wrong token 401, a
 * claim that is no upload target or whose pod is not ready 503 with CDI's words, and a
 * good token streams the image to the upload server over mutual TLS (the server accepts
 * only the proxy's client name), which writes it. The upload itself goes over a stream
 * the resolver supplies (`connect`, local mode's way into a pod's network namespace)
 * instead of the address it names, which nothing listens on.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUploadServer, type UploadServer } from '../../../src/controllers/cdi-importer/upload-server';
import { startUploadProxy, type UploadProxy } from '../../../src/controllers/cdi-uploadproxy/upload-proxy';
import {
  POD_PHASE_ANNOTATION,
  POD_READY_ANNOTATION,
  UPLOAD_CLIENT_NAME,
  UPLOAD_REQUEST_ANNOTATION,
} from '../../../src/controllers/common/cdi-upload';
import {
  InvalidUploadTokenError,
  signUploadToken,
  verifyUploadToken,
} from '../../../src/controllers/common/upload-token';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { PersistentVolumeClaimType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';
import { sourceDisks } from '../cdi-importer/importer-fixture';

const NS = 'default';
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('upload tokens', () => {
  it('sign and verify; tampering, expiry, another key and alg none are refused', async () => {
    const ca = await createCA('ca', new Date(), 86_400_000);
    const now = new Date();
    const signer = await createLeaf(ca, { commonName: 'signer', usage: 'client' }, now, 3_600_000);
    const other = await createLeaf(ca, { commonName: 'other', usage: 'client' }, now, 3_600_000);
    const token = signUploadToken(signer.key, NS, 'disk', now);
    expect(verifyUploadToken(token, signer.cert, now)).toEqual({
      operation: 'Upload',
      name: 'disk',
      namespace: NS,
      resource: { group: '', version: 'v1', resource: 'persistentvolumeclaims' },
    });
    const refused = (t: string, at = now, cert = signer.cert) => {
      try {
        verifyUploadToken(t, cert, at);
        return 'accepted';
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidUploadTokenError);
        return (e as Error).message;
      }
    };
    const [h, p, s] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, name: 'victim' })).toString('base64url');
    expect(refused(`${h}.${forged}.${s}`)).toBe('bad signature');
    expect(refused(token, new Date(now.getTime() + 6 * 60_000))).toBe('expired');
    expect(refused(token, now, other.cert)).toBe('bad signature');
    const none = Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url');
    expect(refused(`${none}.${p}.${s}`)).toMatch(/algorithm none refused/);
    expect(refused('garbage')).toBe('not a JWT');
  });
});

describe('cdi-uploadproxy (loopback TLS, a real upload server)', () => {
  let dir: string;
  let store: EmbeddedStore;
  let proxy: UploadProxy;
  let server: UploadServer;
  let ca: string;
  let signerKey: string;
  let raw: Buffer;
  let qcow2: Buffer;
  let resolved = 0;
  let dialled = 0;
  const data = () => join(dir, 'data');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-uploadproxy-'));
    const caPair = await createCA('ca', new Date(), 86_400_000);
    ca = caPair.cert;
    const now = new Date();
    const leaf = (commonName: string, usage: 'server' | 'client', dnsNames?: string[]) =>
      createLeaf(caPair, { commonName, usage, ...(dnsNames ? { dnsNames } : {}) }, now, 3_600_000);
    const files: Record<string, string> = { 'ca.crt': ca };
    const put = (name: string, p: { cert: string; key: string }) => {
      files[`${name}.crt`] = p.cert;
      files[`${name}.key`] = p.key;
    };
    put('proxy', await leaf('cdi-uploadproxy.kubevirt.svc', 'server', ['cdi-uploadproxy.kubevirt.svc']));
    put('client', await leaf(UPLOAD_CLIENT_NAME, 'client'));
    put('server', await leaf('cdi-upload-disk.default.svc', 'server', ['cdi-upload-disk.default.svc']));
    const signer = await leaf('signer', 'client');
    put('signer', signer);
    signerKey = signer.key;
    for (const [k, v] of Object.entries(files)) writeFileSync(join(dir, k), v);
    mkdirSync(data());
    mkdirSync(join(dir, 'scratch'));
    raw = Buffer.alloc(2 << 20);
    raw.write('uploaded through the proxy', 1 << 20);
    ({ qcow2 } = sourceDisks(dir, raw));

    server = await startUploadServer({
      certFile: join(dir, 'server.crt'),
      keyFile: join(dir, 'server.key'),
      clientCaFile: join(dir, 'ca.crt'),
      clientName: UPLOAD_CLIENT_NAME,
      port: 0,
      host: '127.0.0.1',
      paths: { dataDir: data(), scratchDir: join(dir, 'scratch'), blockDevice: '' },
      volumeMode: 'Filesystem',
      filesystemOverhead: 0,
    });
    store = await EmbeddedStore.open();
    const claim = (name: string, annotations: Record<string, string>) =>
      store.create(PersistentVolumeClaimType, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name, namespace: NS, annotations },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      } as KubeObject);
    await claim('disk', {
      [UPLOAD_REQUEST_ANNOTATION]: '',
      [POD_READY_ANNOTATION]: 'true',
      [POD_PHASE_ANNOTATION]: 'Running',
    });
    await claim('plain', {});
    await claim('notready', { [UPLOAD_REQUEST_ANNOTATION]: '', [POD_READY_ANNOTATION]: 'false' });
    proxy = await startUploadProxy({
      client: store,
      certFile: join(dir, 'proxy.crt'),
      keyFile: join(dir, 'proxy.key'),
      signerCertFile: join(dir, 'signer.crt'),
      clientCertFile: join(dir, 'client.crt'),
      clientKeyFile: join(dir, 'client.key'),
      caBundleFile: join(dir, 'ca.crt'),
      port: 0,
      host: '127.0.0.1',
      readyWaitMs: 1500,
      resolve: async (ns, name) =>
        // The first requests by address; the upload by the stream the resolver gives.
        ++resolved < 2
          ? { host: '127.0.0.1', port: server.port, servername: `cdi-upload-${name}.${ns}.svc` }
          : {
              host: '127.0.0.1',
              port: 1,
              servername: `cdi-upload-${name}.${ns}.svc`,
              connect: () => {
                dialled++;
                return connect(server.port, '127.0.0.1');
              },
            },
    });
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function send(path: string, token: string | undefined, body?: Buffer) {
    return new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: proxy.port,
          path,
          method: body ? 'POST' : 'HEAD',
          ca,
          servername: 'cdi-uploadproxy.kubevirt.svc',
          headers: {
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(body ? { 'content-length': String(body.length) } : {}),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('refuses missing and wrong tokens and claims not ready, then proxies a good upload', async () => {
    const good = signUploadToken(signerKey, NS, 'disk');
    expect((await send('/v1beta1/upload', undefined, qcow2)).status).toBe(400);
    const wrong = `${good.slice(0, -4)}AAAA`;
    const w = await send('/v1beta1/upload', wrong, qcow2);
    expect(w.status).toBe(401);
    const plain = await send('/v1beta1/upload', signUploadToken(signerKey, NS, 'plain'), qcow2);
    expect(plain).toEqual({
      status: 503,
      text: 'rejecting Upload Request for PVC plain: it is not an upload target',
    });
    const gone = await send('/v1beta1/upload', signUploadToken(signerKey, NS, 'nothere'), qcow2);
    expect(gone).toEqual({
      status: 503,
      text: "rejecting Upload Request for PVC nothere that doesn't exist",
    });
    const notReady = await send('/v1beta1/upload', signUploadToken(signerKey, NS, 'notready'), qcow2);
    expect(notReady).toEqual({ status: 503, text: `the upload pod of PVC ${NS}/notready is not ready yet` });
    // The async probe reaches the server through the proxy.
    expect((await send('/v1beta1/upload-async', good)).status).toBe(200);
    expect(dialled).toBe(0);
    const ok = await send('/v1beta1/upload', good, qcow2);
    expect(ok.status).toBe(200);
    expect(dialled).toBe(1);
    await server.done;
    expect(sha(readFileSync(join(data(), 'disk.img')))).toBe(sha(raw));
  });
});
