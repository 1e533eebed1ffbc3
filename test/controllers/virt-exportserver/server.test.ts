/**
 * The export server over loopback with a real TLS pair from a CA: the token is required
 * (401 without it or with another, in the header or the query), the image is served raw
 * (whole and by range) and gzip'd, a files volume as a tar.gz and one by one (nothing
 * outside it), the manifests from the ConfigMap files, the readiness path without a token,
 * and the server stops at its deadline.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { serverPathsFromEnv, volumeEnv, volumeUris } from '../../../src/controllers/common/export-paths';
import { type ExportServer, startExportServer } from '../../../src/controllers/virt-exportserver/server';
import { createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';

const TOKEN = 'tok-123456789';
let dir: string;
let server: ExportServer;
let ca: string;
const image = randomBytes(300_000);

function get(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: server.port, path, headers, ca, servername: 'virt-export-e.ns.svc' },
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
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kvts-export-'));
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
  writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
  mkdirSync(join(dir, 'vols/disk'), { recursive: true });
  writeFileSync(join(dir, 'vols/disk/disk.img'), image);
  mkdirSync(join(dir, 'vols/files/sub/lost+found'), { recursive: true });
  mkdirSync(join(dir, 'vols/files/lost+found'));
  writeFileSync(join(dir, 'vols/files/a.txt'), 'AAA\n');
  writeFileSync(join(dir, 'vols/files/sub/b.txt'), 'BBB\n');
  writeFileSync(join(dir, 'secret.txt'), 'outside\n');
  const md = join(dir, 'manifest');
  mkdirSync(md);
  writeFileSync(join(md, 'export-name'), 'e');
  writeFileSync(join(md, 'internal_host'), 'virt-export-e.ns.svc');
  writeFileSync(
    join(md, 'internal_ca_cm'),
    JSON.stringify({ metadata: { name: 'export-ca-cm-e' }, data: { 'ca.pem': ca } }),
  );
  writeFileSync(
    join(md, 'virtualmachine-manifest'),
    JSON.stringify({
      metadata: { name: 'vm', namespace: 'ns' },
      spec: {
        template: { spec: { volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'disk' } }] } },
      },
    }),
  );
  writeFileSync(
    join(md, 'dv-disk'),
    JSON.stringify({
      metadata: { name: 'disk', namespace: 'ns' },
      spec: { source: { http: { url: '' } }, storage: {} },
    }),
  );
  // The paths as the controller's env gives them, read back as the command does.
  const env = Object.fromEntries(
    [
      ...volumeEnv(0, { path: join(dir, 'vols/disk'), ...volumeUris('disk', true) }),
      ...volumeEnv(1, { path: join(dir, 'vols/files'), ...volumeUris('files', false) }),
      { name: 'EXPORT_VM_DEF_URI', value: '/manifests/all' },
      { name: 'EXPORT_SECRET_DEF_URI', value: '/manifests/secret' },
    ].map((e) => [e.name, e.value]),
  );
  server = await startExportServer({
    paths: serverPathsFromEnv(env),
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    tokenFile: join(dir, 'token'),
    port: 0,
    host: '127.0.0.1',
    manifestDir: md,
    log: () => {},
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('virt-exportserver', () => {
  it('refuses a request without the token or with another one', async () => {
    expect((await get('/volumes/disk/disk.img')).status).toBe(401);
    expect((await get('/volumes/disk/disk.img', { 'x-kubevirt-export-token': 'wrong' })).status).toBe(401);
    expect((await get('/volumes/disk/disk.img?x-kubevirt-export-token=tok-12345678X')).status).toBe(401);
    expect((await get('/internal/manifests/all')).status).toBe(401);
    expect((await get('/volumes/nope/disk.img', { 'x-kubevirt-export-token': TOKEN })).status).toBe(404);
  });

  it('answers the readiness probe without a token', async () => {
    expect((await get('/exportready')).status).toBe(200);
  });

  it('serves the image raw, by range, and gzip-compressed', async () => {
    const raw = await get('/volumes/disk/disk.img', { 'x-kubevirt-export-token': TOKEN });
    expect(raw.status).toBe(200);
    expect(raw.headers['content-length']).toBe(String(image.length));
    expect(sha(raw.body)).toBe(sha(image));
    const part = await get('/volumes/disk/disk.img', {
      'x-kubevirt-export-token': TOKEN,
      range: 'bytes=10-19',
    });
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 10-19/${image.length}`);
    expect(part.body.equals(image.subarray(10, 20))).toBe(true);
    const gz = await get(`/volumes/disk/disk.img.gz?x-kubevirt-export-token=${TOKEN}`);
    expect(gz.status).toBe(200);
    expect(sha(gunzipSync(gz.body))).toBe(sha(image));
  });

  it('serves a files volume as a tar.gz without lost+found, and file by file inside it only', async () => {
    const tgz = await get('/volumes/files/disk.tar.gz', { 'x-kubevirt-export-token': TOKEN });
    expect(tgz.status).toBe(200);
    const out = join(dir, 'untar');
    mkdirSync(out);
    writeFileSync(join(dir, 'files.tar.gz'), tgz.body);
    const names = execFileSync('tar', ['-tzf', join(dir, 'files.tar.gz')], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .sort();
    expect(names).toEqual(['./', './a.txt', './sub/', './sub/b.txt', './sub/lost+found/']);
    const h = { 'x-kubevirt-export-token': TOKEN };
    expect((await get('/volumes/files/dir/', h)).body.toString()).toBe('a.txt\nsub/\n');
    expect((await get('/volumes/files/dir/sub/b.txt', h)).body.toString()).toBe('BBB\n');
    expect((await get('/volumes/files/dir/../../secret.txt', h)).status).toBe(404);
    expect((await get('/volumes/files/dir/%2e%2e/%2e%2e/secret.txt', h)).status).toBe(404);
  });

  it('serves the manifests: the CA ConfigMap, the VM, a DataVolume per claim and the header Secret', async () => {
    const all = JSON.parse(
      (await get('/internal/manifests/all', { 'x-kubevirt-export-token': TOKEN })).body.toString(),
    );
    expect(all.kind).toBe('List');
    expect(all.items.map((i: { kind: string }) => i.kind)).toEqual([
      'ConfigMap',
      'VirtualMachine',
      'DataVolume',
    ]);
    expect(all.items[2].spec.source.http).toEqual({
      url: 'https://virt-export-e.ns.svc/volumes/disk/disk.img.gz',
      certConfigMap: 'export-ca-cm-e',
      secretExtraHeaders: ['header-secret-e'],
    });
    const secret = await get('/internal/manifests/secret', {
      'x-kubevirt-export-token': TOKEN,
      accept: 'application/yaml',
    });
    expect(secret.body.toString()).toContain(`token: x-kubevirt-export-token:${TOKEN}\n`);
    // YAML as upstream writes it: one document per object, each ended by `---`, so the two
    // answers `vmexport download --manifest --include-secret` prints make one stream.
    const allYaml = await get('/internal/manifests/all', {
      'x-kubevirt-export-token': TOKEN,
      accept: 'application/yaml',
    });
    expect(allYaml.headers['content-type']).toBe('application/yaml');
    const stream = allYaml.body.toString() + secret.body.toString();
    const docs = parseAllDocuments(stream)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null)
      .filter((d) => d !== null);
    expect(docs.map((d) => `${d.kind}/${d.metadata?.name}`)).toEqual([
      'ConfigMap/export-ca-cm-e',
      'VirtualMachine/vm',
      'DataVolume/disk',
      'Secret/header-secret-e',
    ]);
    expect(stream.endsWith('---\n')).toBe(true);
  });

  it('stops at its deadline', async () => {
    const s = await startExportServer({
      paths: { volumes: [{ path: join(dir, 'vols/disk'), ...volumeUris('disk', true) }] },
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      tokenFile: join(dir, 'token'),
      port: 0,
      host: '127.0.0.1',
      deadline: new Date(Date.now() + 300),
      log: () => {},
    });
    await s.closed;
    expect(s.server.listening).toBe(false);
  });
});
