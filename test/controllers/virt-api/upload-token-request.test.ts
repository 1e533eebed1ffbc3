/**
 * virt-api's upload.cdi.kubevirt.io: discovery, and UploadTokenRequest create answering
 * with a token for the named PVC that the signer's certificate verifies; the caller's
 * right to create in the namespace is checked first; a missing or invalid pvcName, a
 * namespace mismatch, another verb, and a virt-api without a signer key are refused.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyUploadToken } from '../../../src/controllers/common/upload-token';
import { HttpError, type RawResponse } from '../../../src/controllers/virt-api/http-error';
import { serveUploadApi } from '../../../src/controllers/virt-api/upload-token-request';
import { createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';

describe('upload.cdi.kubevirt.io in virt-api', () => {
  let dir: string;
  let signerCert: string;
  const checked: string[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-utr-'));
    const ca = await createCA('ca', new Date(), 86_400_000);
    const signer = await createLeaf(ca, { commonName: 'signer', usage: 'client' }, new Date(), 3_600_000);
    signerCert = signer.cert;
    writeFileSync(join(dir, 'tls.key'), signer.key);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const call = (method: string, path: string, body: unknown, keyFile: string | null = join(dir, 'tls.key')) =>
    serveUploadApi(
      method,
      { path, segments: path.split('/').slice(1) },
      {
        authorizeCreate: async (ns) => {
          checked.push(ns);
          if (ns === 'forbidden') throw new HttpError(403, 'user "bob" cannot create uploadtokenrequests');
        },
        body: async () => body,
        signerKeyFile: keyFile ?? undefined,
      },
    );
  const fail = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'answered';
    } catch (e) {
      return `${(e as HttpError).code} ${(e as Error).message}`;
    }
  };
  const base = '/apis/upload.cdi.kubevirt.io/v1beta1';

  it('discovery lists uploadtokenrequests (create)', async () => {
    expect(await call('GET', base, undefined)).toMatchObject({
      groupVersion: 'upload.cdi.kubevirt.io/v1beta1',
      resources: [
        { name: 'uploadtokenrequests', kind: 'UploadTokenRequest', namespaced: true, verbs: ['create'] },
      ],
    });
    expect(await call('GET', '/apis/upload.cdi.kubevirt.io', undefined)).toMatchObject({
      kind: 'APIGroup',
      preferredVersion: { version: 'v1beta1' },
    });
  });

  it('create answers with a token for the PVC, after the authorization check', async () => {
    const r = (await call('POST', `${base}/namespaces/ns1/uploadtokenrequests`, {
      apiVersion: 'upload.cdi.kubevirt.io/v1beta1',
      kind: 'UploadTokenRequest',
      metadata: { generateName: 'token-for-virtctl-' },
      spec: { pvcName: 'disk' },
    })) as RawResponse;
    expect(r.code).toBe(201);
    const obj = JSON.parse(r.body.toString());
    expect(obj.metadata.name).toMatch(/^token-for-virtctl-[0-9a-f]{5}$/);
    expect(obj.metadata.namespace).toBe('ns1');
    expect(obj.spec).toEqual({ pvcName: 'disk' });
    expect(verifyUploadToken(obj.status.token, signerCert)).toMatchObject({ name: 'disk', namespace: 'ns1' });
    expect(checked).toContain('ns1');
  });

  it('refusals name the field or the reason', async () => {
    const url = `${base}/namespaces/ns1/uploadtokenrequests`;
    expect(await fail(call('POST', url, { spec: {} }))).toBe(
      '400 UploadTokenRequest: spec.pvcName: Required value',
    );
    expect(await fail(call('POST', url, { spec: { pvcName: 'Bad/Name' } }))).toMatch(
      /^400 UploadTokenRequest: spec.pvcName: Invalid value/,
    );
    expect(await fail(call('POST', url, { metadata: { namespace: 'other' }, spec: { pvcName: 'd' } }))).toBe(
      '400 metadata.namespace: "other" is not ns1',
    );
    expect(await fail(call('GET', url, undefined))).toMatch(/^405 /);
    expect(
      await fail(
        call('POST', `${base}/namespaces/forbidden/uploadtokenrequests`, { spec: { pvcName: 'd' } }),
      ),
    ).toMatch(/^403 /);
    expect(await fail(call('POST', url, { spec: { pvcName: 'd' } }, null))).toMatch(
      /^503 upload tokens are not configured/,
    );
    expect(await fail(call('POST', `${base}/namespaces/ns1/uploadtokenrequests/x`, {}))).toMatch(/^404 /);
  });
});
