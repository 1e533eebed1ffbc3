/** The embedded REST server against hostile requests: path tricks, malformed bodies. */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  type EmbeddedServer,
  EmbeddedStore,
  type KubeObject,
  NamespaceType,
  serveEmbeddedStore,
} from '../../../../src/controllers/runtime';

let dir: string;
let store: EmbeddedStore;
let server: EmbeddedServer;

function raw(method: string, p: string, body?: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ socketPath: server.socketPath, method, path: p, headers }, (res) => {
      let b = '';
      res.on('data', (d) => {
        b += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
    });
    req.on('error', reject);
    req.on('socket', (sock) => sock.on('error', () => {}));
    req.end(body);
  });
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-srvh-'));
  store = await EmbeddedStore.open();
  server = await serveEmbeddedStore(store, path.join(dir, 'api.sock'));
  await store.create(NamespaceType, { metadata: { name: 'victim' } });
  await store.create(ConfigMapType, {
    metadata: { name: 'keep', namespace: 'victim' },
    data: { a: '1' },
  } as never);
});
afterAll(async () => {
  await server.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('embedded REST server: path segments', () => {
  const dotNames = ['..', '.', '%2e%2e', '%2E%2e', '%2e', '.%2e', 'a%2fb', 'a%2Fb', '%25', 'x%252e'];

  it('refuses dot, slash and percent names on every verb and leaves the namespace and its content alone', async () => {
    for (const name of dotNames) {
      for (const [method, body, ct] of [
        ['DELETE', undefined, undefined],
        ['GET', undefined, undefined],
        ['PUT', '{"metadata":{"name":"victim"}}', 'application/json'],
        ['PATCH', '{"metadata":{"labels":{"x":"y"}}}', 'application/merge-patch+json'],
      ] as const) {
        const r = await raw(
          method,
          `/api/v1/namespaces/victim/configmaps/${name}`,
          body,
          ct ? { 'content-type': ct } : {},
        );
        expect([method, name, r.status]).toEqual([method, name, 400]);
        expect(JSON.parse(r.body).reason).toBe('BadRequest');
      }
    }
    const ns = await store.get(NamespaceType, 'victim');
    expect(ns.metadata?.deletionTimestamp).toBeUndefined();
    expect(ns.metadata?.labels).toBeUndefined();
    expect((await store.get<KubeObject & { data: object }>(ConfigMapType, 'keep', 'victim')).data).toEqual({
      a: '1',
    });
  });

  it('refuses a dot namespace segment too', async () => {
    for (const p of ['/api/v1/namespaces/../configmaps', '/api/v1/namespaces/%2e%2e/configmaps/keep']) {
      expect((await raw('GET', p)).status).toBe(400);
    }
  });

  it('answers malformed percent-encoding with 400, not 500', async () => {
    for (const p of [
      '/api/v1/namespaces/victim/configmaps/%zz',
      '/api/v1/namespaces/victim/configmaps/%E0%A4%A',
      '/api/v1/namespaces/%/configmaps',
    ]) {
      const r = await raw('GET', p);
      expect([p, r.status]).toEqual([p, 400]);
      expect(JSON.parse(r.body).message).toMatch(/percent-encoding/);
    }
  });

  it('still serves ordinary names and queries', async () => {
    const r = await raw('GET', '/api/v1/namespaces/victim/configmaps/keep?resourceVersion=0');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).data).toEqual({ a: '1' });
    const l = await raw('GET', '/api/v1/namespaces/victim/configmaps?labelSelector=a%3Db');
    expect(JSON.parse(l.body).items).toEqual([]);
  });
});
