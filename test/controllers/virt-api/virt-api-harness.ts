/**
 * virt-api on the embedded store over real HTTPS, called as the aggregator calls it
 * (front-proxy client certificate, X-Remote-User): for tests of the answers upstream's
 * virtctl reads. `close()` stops it and removes the temp dir.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { PLAIN_STREAM_PROTOCOL } from '../../../src/controllers/common/ws-stream';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import {
  NamespaceType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { startVirtApi, type VirtApi } from '../../../src/controllers/virt-api/server';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';

/** An answer: status code and parsed JSON body (or the raw text). */
export interface Answer {
  code: number;
  body: Record<string, unknown>;
}

/** A started virt-api on an embedded store. */
export interface VirtApiHarness {
  store: EmbeddedStore;
  api: VirtApi;
  /** The feature gates in force (read at each request; change it in place). */
  gates: string[];
  call(method: string, path: string, body?: unknown): Promise<Answer>;
  /** Opens a websocket on `path` (plain.kubevirt.io); resolves open, or rejects with the HTTP code and body. */
  stream(path: string): Promise<WebSocket>;
  /** Creates an object, then sets its status (the store keeps status apart). */
  put(type: typeof VirtualMachineType, obj: KubeObject & { status?: unknown }): Promise<KubeObject>;
  close(): Promise<void>;
}

/** Starts virt-api on a fresh embedded store holding `namespace`. */
export async function startVirtApiHarness(namespace = 'ns1'): Promise<VirtApiHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'kvts-virtapi-h-'));
  const caFiles = makeCa(dir, 'ca');
  const serving = issue(dir, caFiles, 'serving', 'virt-api', ['IP:127.0.0.1']);
  const client = issue(dir, caFiles, 'client', 'kubevirt.io:system:client:virt-handler');
  const proxy: CertFiles = issue(dir, caFiles, 'proxy', 'front-proxy-client');
  const ca = readFileSync(caFiles.cert);
  const gates: string[] = [];
  const store = await EmbeddedStore.open();
  await store.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const api = await startVirtApi({
    client: store,
    // Authorization is path-authz.test.ts's subject: here every call is allowed.
    authorizer: async () => ({ allowed: true }),
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () =>
      createClusterConfig(
        { developerConfiguration: { featureGates: [...gates] } },
        { hostArchitecture: 'amd64' },
      ),
    kubevirtNamespace: 'kubevirt',
    handler: { tls: { ...client, ca: caFiles.cert } },
    requestHeader: {
      clientCA: ca.toString(),
      allowedNames: ['front-proxy-client'],
      usernameHeaders: ['X-Remote-User'],
      groupHeaders: [],
      extraHeaderPrefixes: [],
    },
  });
  const tls = { ca, cert: readFileSync(proxy.cert), key: readFileSync(proxy.key) };
  const headers = { 'x-remote-user': 'alice' };
  return {
    store,
    api,
    gates,
    call: (method, path, body) =>
      new Promise<Answer>((resolve, reject) => {
        const data = body === undefined ? undefined : JSON.stringify(body);
        const req = request(
          {
            host: '127.0.0.1',
            port: api.port,
            path,
            method,
            ...tls,
            headers: {
              ...headers,
              'content-type': 'application/json',
              ...(data === undefined ? {} : { 'content-length': Buffer.byteLength(data) }),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (d: Buffer) => {
              text += d.toString();
            });
            res.on('end', () => {
              let parsed: Record<string, unknown>;
              try {
                parsed = JSON.parse(text);
              } catch {
                parsed = { text };
              }
              resolve({ code: res.statusCode ?? 0, body: parsed });
            });
          },
        );
        req.on('error', reject);
        req.end(data);
      }),
    stream: (path) =>
      new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(`wss://127.0.0.1:${api.port}${path}`, [PLAIN_STREAM_PROTOCOL], {
          ...tls,
          headers,
        });
        ws.once('open', () => resolve(ws));
        ws.once('unexpected-response', (_req, res) => {
          let text = '';
          res.on('data', (d: Buffer) => {
            text += d.toString();
          });
          res.on('end', () => reject(Object.assign(new Error(text), { code: res.statusCode })));
        });
        ws.once('error', reject);
      }),
    put: async (type, obj) => {
      const { status, ...rest } = obj;
      const created = await store.create<KubeObject>(type, rest as KubeObject);
      if (status === undefined) return created;
      return store.patch<KubeObject>(
        type,
        obj.metadata?.name ?? '',
        { status },
        { namespace: obj.metadata?.namespace, type: 'merge', subresource: 'status' },
      );
    },
    close: async () => {
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { VirtualMachineInstanceType, VirtualMachineType };
