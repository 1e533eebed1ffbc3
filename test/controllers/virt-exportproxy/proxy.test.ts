/**
 * virt-exportproxy over loopback with real TLS from one CA: path parsing (upstream's
 * pattern, v1 and v1beta1); a request forwarded to a fake export server (its certificate
 * for the Service's DNS name, checked against the CA bundle) as `/{rest}` with the query
 * and the token header untouched, the body streamed back byte for byte with its status
 * and headers; 400 for another path, 404 for a missing export, 503 while it is not Ready,
 * 502 when the server's certificate does not carry the Service's name; /healthz.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, request, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExportLookup } from '../../../src/controllers/virt-exportproxy/proxy';
import { parseProxyPath } from '../../../src/controllers/virt-exportproxy/proxy';
import { type ExportProxy, startExportProxy } from '../../../src/controllers/virt-exportproxy/server';
import { type CertPair, createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';

const PREFIX = '/api/export.kubevirt.io/v1beta1/namespaces/ns/virtualmachineexports';
const image = randomBytes(1_500_000);
let dir: string;
let ca: CertPair;
let upstream: Server;
let wrongName: Server;
let proxy: ExportProxy;
const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
const exports: Record<string, { phase?: string; serviceName?: string }> = {
  'ns/e': { phase: 'Ready', serviceName: 'virt-export-e' },
  'ns/pending': { phase: 'Pending', serviceName: 'virt-export-pending' },
  'ns/wrong': { phase: 'Ready', serviceName: 'virt-export-wrong' },
};

/** A fake export server presenting `pair`: the image on one path, 401 without the token. */
async function fakeServer(pair: CertPair): Promise<Server> {
  const s = createServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    if (
      req.headers['x-kubevirt-export-token'] !== 'tok' &&
      !req.url?.includes('x-kubevirt-export-token=tok')
    ) {
      res.writeHead(401).end();
      return;
    }
    if (req.url?.startsWith('/volumes/disk/disk.img'))
      res.writeHead(200, { 'content-length': image.length, 'x-from': 'export' }).end(image);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return s;
}

const port = (s: Server) => (s.address() as { port: number }).port;

function get(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: proxy.port,
        path,
        headers,
        ca: ca.cert,
        servername: 'virt-exportproxy.kubevirt.svc',
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kvts-exportproxy-'));
  const now = new Date();
  ca = await createCA('test-ca', now, 86_400_000);
  const leaf = (name: string) =>
    createLeaf(ca, { commonName: name, dnsNames: [name], usage: 'server' }, now, 3_600_000);
  upstream = await fakeServer(await leaf('virt-export-e.ns.svc'));
  // Serves for another name than the Service it is reached as.
  wrongName = await fakeServer(await leaf('somewhere-else.ns.svc'));
  const own = await leaf('virt-exportproxy.kubevirt.svc');
  writeFileSync(join(dir, 'tls.crt'), own.cert);
  writeFileSync(join(dir, 'tls.key'), own.key);
  writeFileSync(join(dir, 'ca-bundle'), ca.cert);
  const lookup: ExportLookup = {
    exportStatus: async (ns, name) => exports[`${ns}/${name}`],
    resolveService: async (ns, name) => ({
      host: '127.0.0.1',
      port: port(name === 'virt-export-wrong' ? wrongName : upstream),
      servername: `${name}.${ns}.svc`,
    }),
  };
  proxy = await startExportProxy({
    client: {} as never,
    lookup,
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    caBundleFile: join(dir, 'ca-bundle'),
    port: 0,
    host: '127.0.0.1',
  });
});

afterAll(async () => {
  await proxy?.close();
  upstream?.close();
  wrongName?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('virt-exportproxy path', () => {
  it("parses upstream's export path in v1 and v1beta1; anything else is not one", () => {
    expect(
      parseProxyPath('/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e/volumes/d/disk.img'),
    ).toEqual({
      namespace: 'ns',
      name: 'e',
      path: '/volumes/d/disk.img',
    });
    expect(parseProxyPath(`${PREFIX}/e/external/manifests/all`)).toEqual({
      namespace: 'ns',
      name: 'e',
      path: '/external/manifests/all',
    });
    expect(parseProxyPath(`${PREFIX}/e/`)?.path).toBe('/');
    expect(parseProxyPath(`${PREFIX}/e`)).toBeUndefined();
    expect(
      parseProxyPath('/api/export.kubevirt.io/v2/namespaces/ns/virtualmachineexports/e/x'),
    ).toBeUndefined();
    expect(
      parseProxyPath('/apis/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e/x'),
    ).toBeUndefined();
  });
});

describe('virt-exportproxy forwarding', () => {
  it("streams the export server's answer for `/{rest}`, the token header passed through", async () => {
    seen.length = 0;
    const r = await get(`${PREFIX}/e/volumes/disk/disk.img`, { 'x-kubevirt-export-token': 'tok' });
    expect(r.status).toBe(200);
    expect(r.headers['x-from']).toBe('export');
    expect(createHash('sha256').update(r.body).digest('hex')).toBe(
      createHash('sha256').update(image).digest('hex'),
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url).toBe('/volumes/disk/disk.img');
    expect(seen[0]!.headers['x-kubevirt-export-token']).toBe('tok');
    expect(seen[0]!.headers.host).toBe('virt-export-e.ns.svc');
  });

  it("keeps the query (the token as a parameter) and passes the server's 401 and 404 back", async () => {
    seen.length = 0;
    const q = await get(`${PREFIX}/e/volumes/disk/disk.img?x-kubevirt-export-token=tok`);
    expect(q.status).toBe(200);
    expect(seen[0]!.url).toBe('/volumes/disk/disk.img?x-kubevirt-export-token=tok');
    // The proxy checks no token: the server answers.
    expect((await get(`${PREFIX}/e/volumes/disk/disk.img`)).status).toBe(401);
    expect(
      (await get(`${PREFIX}/e/volumes/other/disk.img`, { 'x-kubevirt-export-token': 'tok' })).status,
    ).toBe(404);
  });

  it('answers 400, 404 and 503 itself, without reaching a server', async () => {
    seen.length = 0;
    expect((await get('/volumes/disk/disk.img')).status).toBe(400);
    expect((await get(`${PREFIX}/missing/volumes/disk/disk.img`)).status).toBe(404);
    expect((await get(`${PREFIX}/pending/volumes/disk/disk.img`)).status).toBe(503);
    // `..` segments are resolved before matching: this is not an export path.
    expect((await get(`${PREFIX}/e/../../x`)).status).toBe(400);
    expect(seen).toEqual([]);
    const h = await get('/healthz');
    expect([h.status, h.body.toString()]).toEqual([200, 'OK']);
  });

  it("502 when the server's certificate does not name the Service", async () => {
    seen.length = 0;
    const r = await get(`${PREFIX}/wrong/volumes/disk/disk.img`, { 'x-kubevirt-export-token': 'tok' });
    expect(r.status).toBe(502);
    expect(r.body.toString()).toMatch(/export server: .*(altnames|Hostname)/i);
    expect(seen).toEqual([]);
  });
});
