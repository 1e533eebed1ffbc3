/**
 * The export server's `/external` manifests (upstream's external VmHandler): served when
 * the manifest ConfigMap has an external host, with the DataVolumes importing from the
 * export proxy's URLs and the Ingress's CA ConfigMap; 404 when it has none.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverPathsFromEnv, volumeEnv, volumeUris } from '../../../src/controllers/common/export-paths';
import { type ExportServer, startExportServer } from '../../../src/controllers/virt-exportserver/server';
import { createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';

const TOKEN = 'tok-external';
const BASE = 'export.example/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e';
let dir: string;
let ca: string;
const servers: ExportServer[] = [];

function get(server: ExportServer, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        ca,
        servername: 'virt-export-e.ns.svc',
        headers: { 'x-kubevirt-export-token': TOKEN },
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A server over manifest directory `md`. */
async function serve(md: string): Promise<ExportServer> {
  const env = Object.fromEntries(
    [
      ...volumeEnv(0, { path: join(dir, 'vols/disk'), ...volumeUris('disk', true) }),
      { name: 'EXPORT_VM_DEF_URI', value: '/manifests/all' },
      { name: 'EXPORT_SECRET_DEF_URI', value: '/manifests/secret' },
    ].map((e) => [e.name, e.value]),
  );
  const s = await startExportServer({
    paths: serverPathsFromEnv(env),
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    tokenFile: join(dir, 'token'),
    port: 0,
    host: '127.0.0.1',
    manifestDir: md,
    log: () => {},
  });
  servers.push(s);
  return s;
}

function manifestDir(name: string, external: boolean): string {
  const md = join(dir, name);
  mkdirSync(md);
  writeFileSync(join(md, 'export-name'), 'e');
  writeFileSync(join(md, 'internal_host'), 'virt-export-e.ns.svc');
  const caCm = (pem: string) =>
    JSON.stringify({ metadata: { name: 'export-ca-cm-e' }, data: { 'ca.pem': pem } });
  writeFileSync(join(md, 'internal_ca_cm'), caCm('INTERNAL-CA'));
  if (external) {
    writeFileSync(join(md, 'external_host'), BASE);
    writeFileSync(join(md, 'external_ca_cm'), caCm('INGRESS-CERT'));
  }
  writeFileSync(
    join(md, 'virtualmachine-manifest'),
    JSON.stringify({ metadata: { name: 'vm', namespace: 'ns' }, spec: { template: { spec: {} } } }),
  );
  writeFileSync(
    join(md, 'dv-disk'),
    JSON.stringify({ metadata: { name: 'disk', namespace: 'ns' }, spec: { source: { http: { url: '' } } } }),
  );
  return md;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kvts-export-ext-'));
  const caPair = await createCA('test-ca', new Date(), 86_400_000);
  ca = caPair.cert;
  const leaf = await createLeaf(
    caPair,
    { commonName: 'virt-export-e.ns.svc', dnsNames: ['virt-export-e.ns.svc'], usage: 'server' },
    new Date(),
    3_600_000,
  );
  writeFileSync(join(dir, 'tls.crt'), leaf.cert);
  writeFileSync(join(dir, 'tls.key'), leaf.key);
  writeFileSync(join(dir, 'token'), TOKEN);
  mkdirSync(join(dir, 'vols/disk'), { recursive: true });
  writeFileSync(join(dir, 'vols/disk/disk.img'), Buffer.alloc(4096, 1));
});

afterAll(async () => {
  for (const s of servers) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('virt-exportserver external manifests', () => {
  it('serves /external/manifests/all on the proxy base with the Ingress CA, beside /internal', async () => {
    const s = await serve(manifestDir('with', true));
    const ext = await get(s, '/external/manifests/all');
    expect(ext.status).toBe(200);
    const items = JSON.parse(ext.body).items;
    expect(items[0].data['ca.pem']).toBe('INGRESS-CERT');
    expect(items[2].spec.source.http.url).toBe(`https://${BASE}/volumes/disk/disk.img.gz`);
    const int = JSON.parse((await get(s, '/internal/manifests/all')).body).items;
    expect(int[2].spec.source.http.url).toBe('https://virt-export-e.ns.svc/volumes/disk/disk.img.gz');
    expect((await get(s, '/external/manifests/secret')).body).toContain(`x-kubevirt-export-token:${TOKEN}`);
  });

  it('answers 404 under /external when no external host was known', async () => {
    const s = await serve(manifestDir('without', false));
    expect((await get(s, '/external/manifests/all')).status).toBe(404);
    expect((await get(s, '/internal/manifests/all')).status).toBe(200);
  });
});
