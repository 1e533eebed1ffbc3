/**
 * virt-api's one port speaks HTTP/2 to clients that offer it by ALPN (the API server's
 * webhook client does) and HTTP/1.1 to the rest, and a websocket subresource still opens
 * by an HTTP/1.1 Upgrade on that port (how the aggregator's proxy and virtctl open them):
 * here a port-forward stream to a loopback echo server, with the front proxy's client
 * certificate, carries bytes both ways.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import { request } from 'node:https';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { PLAIN_STREAM_PROTOCOL } from '../../../src/controllers/common/ws-stream';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import { startVirtApi, type VirtApi } from '../../../src/controllers/virt-api/server';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';

const dir = mkdtempSync(join(tmpdir(), 'kvts-virtapi-h2-'));
let api: VirtApi;
let ca: Buffer;
let proxyClient: CertFiles;
let echo: Server;
let echoPort: number;
const NS_BASE = '/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/vmi-a';

const review = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'u-h2',
    kind: { group: 'kubevirt.io', version: 'v1', kind: 'VirtualMachineInstance' },
    resource: { group: 'kubevirt.io', version: 'v1', resource: 'virtualmachineinstances' },
    operation: 'CREATE',
    userInfo: { username: 'alice' },
    object: {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'vmi-a', namespace: 'default' },
      spec: {
        domain: {
          devices: { disks: [{ name: 'root', disk: {} }] },
          resources: { requests: { memory: '64Mi' } },
        },
        volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
      },
    },
  },
});

/** One request over HTTP/2; resolves with the negotiated protocol, status and JSON body. */
function h2(
  path: string,
  opts: { method?: string; body?: string; cert?: CertFiles; headers?: Record<string, string> } = {},
) {
  return new Promise<{ alpn: string | false | null; status: number; body: Record<string, unknown> }>(
    (resolve, reject) => {
      const session = http2.connect(`https://127.0.0.1:${api.port}`, {
        ca,
        ...(opts.cert ? { cert: readFileSync(opts.cert.cert), key: readFileSync(opts.cert.key) } : {}),
      });
      session.on('error', reject);
      const req = session.request({
        ':method': opts.method ?? 'GET',
        ':path': path,
        'content-type': 'application/json',
        ...opts.headers,
      });
      let status = 0;
      let text = '';
      req.on('response', (h) => {
        status = Number(h[':status']);
      });
      req.on('data', (c: Buffer) => {
        text += c.toString();
      });
      req.on('end', () => {
        const alpn = (session.socket as TLSSocket).alpnProtocol;
        session.close();
        resolve({ alpn, status, body: JSON.parse(text) });
      });
      req.on('error', reject);
      req.end(opts.body);
    },
  );
}

beforeAll(async () => {
  const caFiles = makeCa(dir, 'ca');
  const frontProxyCa = makeCa(dir, 'front-proxy-ca');
  const serving = issue(dir, caFiles, 'serving', 'virt-api', ['IP:127.0.0.1']);
  const handlerClient = issue(dir, caFiles, 'client', 'kubevirt.io:system:client:virt-handler');
  proxyClient = issue(dir, frontProxyCa, 'front-proxy-client', 'front-proxy-client');
  ca = readFileSync(caFiles.cert);
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
  echoPort = (echo.address() as { port: number }).port;
  // The VMI the port-forward reaches: running, its interface address this machine's loopback.
  const vmi = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vmi-a', namespace: 'default' },
    spec: { domain: { devices: {} } },
    status: { phase: 'Running', interfaces: [{ name: 'default', ipAddress: '127.0.0.1' }] },
  };
  const client = {
    get: async (_t: unknown, name: string) => {
      if (name !== 'vmi-a') throw new Error(`${name} not found`);
      return structuredClone(vmi);
    },
  } as unknown as ObjectClient;
  api = await startVirtApi({
    client,
    // Authorization is path-authz.test.ts's subject: here every call is allowed.
    authorizer: async () => ({ allowed: true }),
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    handler: { tls: { ...handlerClient, ca: caFiles.cert } },
    requestHeader: {
      clientCA: readFileSync(frontProxyCa.cert, 'utf8'),
      allowedNames: ['front-proxy-client'],
      usernameHeaders: ['X-Remote-User'],
      groupHeaders: ['X-Remote-Group'],
      extraHeaderPrefixes: [],
    },
  });
});
afterAll(async () => {
  await api?.close();
  echo?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('virt-api over HTTP/2 and HTTP/1.1 on one port', () => {
  it('negotiates h2 by ALPN and answers an AdmissionReview over it with the defaults patch', async () => {
    const r = await h2('/virtualmachineinstances-mutate', { method: 'POST', body: review });
    expect(r.alpn).toBe('h2');
    expect(r.status).toBe(200);
    const response = r.body.response as { uid: string; allowed: boolean; patchType: string; patch: string };
    expect(response.uid).toBe('u-h2');
    expect(response.allowed).toBe(true);
    expect(response.patchType).toBe('JSONPatch');
    const ops = JSON.parse(Buffer.from(response.patch, 'base64').toString()) as { path: string }[];
    expect(ops.map((o) => o.path)).toContain('/spec/domain/machine');
  });

  it('authenticates the front proxy over h2: its certificate passes, none is a 401', async () => {
    const headers = { 'x-remote-user': 'alice' };
    const withCert = await h2(`${NS_BASE}/console`, { cert: proxyClient, headers });
    expect(withCert.alpn).toBe('h2');
    // Past authentication: refused only for not upgrading.
    expect(withCert.status).toBe(400);
    expect(withCert.body.message).toBe('console is a websocket: upgrade the connection');
    const without = await h2(`${NS_BASE}/console`, { headers });
    expect(without.status).toBe(401);
  });

  it('answers an HTTP/1.1 client (no ALPN) the same AdmissionReview', async () => {
    const r = await new Promise<{
      version: string;
      alpn: string | false | null;
      body: Record<string, unknown>;
    }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: api.port,
          path: '/virtualmachineinstances-validate-create',
          method: 'POST',
          ca,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          // Read now: the socket is detached from the response once it ends.
          const alpn = (res.socket as TLSSocket).alpnProtocol;
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve({ version: res.httpVersion, alpn, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(review);
    });
    expect(r.version).toBe('1.1');
    expect(r.alpn).toBe(false);
    expect(r.body.response).toEqual({ uid: 'u-h2', allowed: true });
  });

  it('opens a websocket subresource by HTTP/1.1 Upgrade on the same port; bytes go both ways', async () => {
    const ws = new WebSocket(
      `wss://127.0.0.1:${api.port}${NS_BASE}/portforward/${echoPort}`,
      PLAIN_STREAM_PROTOCOL,
      {
        ca,
        cert: readFileSync(proxyClient.cert),
        key: readFileSync(proxyClient.key),
        headers: { 'X-Remote-User': 'alice' },
        // What Go's upgrade-aware proxy offers: HTTP/1.1 only (ws hands it on to tls.connect).
        ...({ ALPNProtocols: ['http/1.1'] } as object),
      },
    );
    const opened = await new Promise<{ alpn: string | false | null }>((resolve, reject) => {
      ws.once('upgrade', (res) => resolve({ alpn: (res.socket as TLSSocket).alpnProtocol }));
      ws.once('error', reject);
    });
    await new Promise<void>((r) => (ws.readyState === WebSocket.OPEN ? r() : ws.once('open', () => r())));
    expect(opened.alpn).toBe('http/1.1');
    expect(ws.protocol).toBe(PLAIN_STREAM_PROTOCOL);
    const got: Buffer[] = [];
    const echoed = new Promise<string>((resolve) => {
      ws.on('message', (m: Buffer) => {
        got.push(m);
        const s = Buffer.concat(got).toString();
        if (s.length >= 'ping over http/1.1'.length) resolve(s);
      });
    });
    ws.send(Buffer.from('ping over http/1.1'));
    expect(await echoed).toBe('ping over http/1.1');
    ws.close();
  });

  it('refuses an upgrade without the front proxy certificate with a 401 Status', async () => {
    const ws = new WebSocket(
      `wss://127.0.0.1:${api.port}${NS_BASE}/portforward/${echoPort}`,
      PLAIN_STREAM_PROTOCOL,
      {
        ca,
        headers: { 'X-Remote-User': 'alice' },
      },
    );
    const status = await new Promise<number>((resolve, reject) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('upgraded without a client certificate')));
      ws.once('error', reject);
    });
    expect(status).toBe(401);
  });
});
