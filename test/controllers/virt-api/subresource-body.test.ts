/**
 * A subresource body nested past MAX_OBJECT_DEPTH is refused with 400 naming the limit
 * (the subresource handlers recurse over it), before anything acts on it.
 */
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_OBJECT_DEPTH } from '../../../src/api/json-bounds';
import { startVirtApiFixture, type VirtApiFixture } from './virt-api-fixture';

let f: VirtApiFixture;
beforeAll(async () => {
  f = await startVirtApiFixture('kvts-virtapi-body-');
});
afterAll(async () => {
  await f?.close();
});

function put(path: string, body: string) {
  return new Promise<{ status: number; message: string }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: f.api.port,
        path,
        method: 'PUT',
        ca: f.ca,
        ...f.proxy,
        agent: false,
        headers: { 'content-type': 'application/json', 'X-Remote-User': 'alice' },
      },
      (res) => {
        let t = '';
        res.on('data', (c: Buffer) => {
          t += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, message: JSON.parse(t).message }));
      },
    );
    req.on('error', reject).end(body);
  });
}

describe('virt-api subresource bodies', () => {
  it('refuses a body nested 10,000 levels deep with 400', async () => {
    const deep = `{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    for (const path of [
      '/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm1/stop',
      '/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/vmi1/freeze',
      '/apis/subresources.kubevirt.io/v1/namespaces/default/expand-vm-spec',
    ]) {
      const r = await put(path, deep);
      expect([path, r.status, r.message]).toEqual([
        path,
        400,
        `request body is nested more than ${MAX_OBJECT_DEPTH} levels deep`,
      ]);
    }
  });
});
