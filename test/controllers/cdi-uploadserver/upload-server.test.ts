/**
 * The upload server over loopback TLS with certificates from a CA and the real qemu-img:
 * only the proxy's client certificate may upload (none, or another name, 401); a qcow2
 * POSTed to the sync path lands as `disk.img` equal to `qemu-img convert -O raw` of it,
 * grown to the asked size; a short body and a refused image leave no `disk.img` and the
 * server takes the next try; the async path answers before converting; the form path
 * takes the `file` part; after success the server stops and refuses more; an idle server
 * stops at its deadline.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startUploadServer, type UploadServer } from '../../../src/controllers/cdi-importer/upload-server';
import { UPLOAD_CLIENT_NAME } from '../../../src/controllers/common/cdi-upload';
import { createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';
import { sourceDisks, stampedRaw } from '../cdi-importer/importer-fixture';

const hasQemuImg = (() => {
  try {
    execFileSync('qemu-img', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const NAME = 'cdi-upload-disk.ns.svc';

interface Pair {
  cert: string;
  key: string;
}

describe.skipIf(!hasQemuImg)('cdi-uploadserver (loopback TLS, qemu-img)', () => {
  let dir: string;
  let ca: string;
  let client: Pair;
  let stranger: Pair;
  let serverPair: Pair;
  let raw: Buffer;
  let qcow2: Buffer;
  const servers: UploadServer[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-upload-'));
    const caPair = await createCA('test-ca', new Date(), 86_400_000);
    ca = caPair.cert;
    const now = new Date();
    serverPair = await createLeaf(
      caPair,
      { commonName: NAME, dnsNames: [NAME], usage: 'server' },
      now,
      3_600_000,
    );
    client = await createLeaf(caPair, { commonName: UPLOAD_CLIENT_NAME, usage: 'client' }, now, 3_600_000);
    stranger = await createLeaf(caPair, { commonName: 'someone-else', usage: 'client' }, now, 3_600_000);
    writeFileSync(join(dir, 'tls.crt'), serverPair.cert);
    writeFileSync(join(dir, 'tls.key'), serverPair.key);
    writeFileSync(join(dir, 'ca.crt'), ca);
    ({ raw, qcow2 } = sourceDisks(dir, stampedRaw(3, 'upload block')));
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(name: string, imageSizeBytes?: number, deadline?: Date) {
    const paths = {
      dataDir: join(dir, `${name}-data`),
      scratchDir: join(dir, `${name}-scratch`),
      blockDevice: '',
    };
    mkdirSync(paths.dataDir);
    mkdirSync(paths.scratchDir);
    const s = await startUploadServer({
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      clientCaFile: join(dir, 'ca.crt'),
      clientName: UPLOAD_CLIENT_NAME,
      port: 0,
      host: '127.0.0.1',
      paths,
      volumeMode: 'Filesystem',
      imageSizeBytes,
      filesystemOverhead: 0,
      deadline,
    });
    servers.push(s);
    return { s, paths };
  }

  function post(
    port: number,
    path: string,
    body: Buffer | undefined,
    o: { pair?: Pair; headers?: Record<string, string>; method?: string } = {},
  ): Promise<{ status: number; text: string }> {
    const pair = o.pair === undefined ? client : o.pair;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path,
          method: o.method ?? 'POST',
          ca,
          servername: NAME,
          ...(pair ? { cert: pair.cert, key: pair.key } : {}),
          headers: { ...(body ? { 'content-length': String(body.length) } : {}), ...o.headers },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: text.trim() }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  it('takes a qcow2 only from the proxy client, writes it as raw disk.img grown to the size, then stops', async () => {
    const { s, paths } = await start('sync', 8 << 20);
    expect((await post(s.port, '/healthz', undefined, { pair: undefined, method: 'GET' })).status).toBe(200);
    expect((await post(s.port, '/v1beta1/upload', qcow2, { pair: null as never })).status).toBe(401);
    expect((await post(s.port, '/v1beta1/upload', qcow2, { pair: stranger })).status).toBe(401);
    expect(existsSync(join(paths.dataDir, 'disk.img'))).toBe(false);
    expect((await post(s.port, '/v1beta1/upload', qcow2)).status).toBe(200);
    const out = await s.done;
    const disk = readFileSync(join(paths.dataDir, 'disk.img'));
    expect(disk.length).toBe(8 << 20);
    expect(out).toMatchObject({ diskBytes: 8 << 20 });
    expect(sha(disk.subarray(0, raw.length))).toBe(sha(raw));
    expect(disk.subarray(raw.length).every((b) => b === 0)).toBe(true);
    // Nothing of the upload is left in scratch.
    expect(existsSync(join(paths.scratchDir, 'upload-image'))).toBe(false);
    expect(existsSync(join(paths.scratchDir, 'upload-image.tmp'))).toBe(false);
  });

  it('a short body and an image with a backing file leave no disk.img; the next try succeeds', async () => {
    const { s, paths } = await start('retry');
    // A body that ends before its content-length (the client went away).
    const cut = await new Promise<number>((resolve, reject) => {
      const sock = connect({ host: '127.0.0.1', port: s.port, ca, servername: NAME, ...client }, () => {
        sock.write(`POST /v1beta1/upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${qcow2.length}\r\n\r\n`);
        sock.write(qcow2.subarray(0, 100_000), () => setTimeout(() => sock.destroy(), 200));
      });
      sock.on('error', reject);
      sock.on('close', () => resolve(0));
    });
    expect(cut).toBe(0);
    const child = join(dir, 'child.qcow2');
    execFileSync('qemu-img', ['create', '-f', 'qcow2', '-b', join(dir, 'src.qcow2'), '-F', 'qcow2', child]);
    // The server is busy until it has seen the cut connection end (503 until then, which
    // the proxy passes on for the client to retry): try again for up to 5 s.
    let refused = await post(s.port, '/v1beta1/upload', readFileSync(child));
    for (let i = 0; refused.status === 503 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      refused = await post(s.port, '/v1beta1/upload', readFileSync(child));
    }
    expect(refused.status).toBe(400);
    expect(refused.text).toMatch(/backing file/);
    expect(existsSync(join(paths.dataDir, 'disk.img'))).toBe(false);
    expect((await post(s.port, '/v1beta1/upload-archive', qcow2)).status).toBe(400);
    // Raw works too, and is taken as it is.
    expect((await post(s.port, '/v1beta1/upload', raw)).status).toBe(200);
    await s.done;
    expect(sha(readFileSync(join(paths.dataDir, 'disk.img')))).toBe(sha(raw));
    expect((await post(s.port, '/v1beta1/upload', raw).catch(() => ({ status: 0 }))).status).not.toBe(200);
  });

  it('async: HEAD answers 200, the POST is answered when received, done after conversion', async () => {
    const { s, paths } = await start('async');
    expect((await post(s.port, '/v1beta1/upload-async', undefined, { method: 'HEAD' })).status).toBe(200);
    expect((await post(s.port, '/v1beta1/upload-async', qcow2)).status).toBe(200);
    await s.done;
    expect(sha(readFileSync(join(paths.dataDir, 'disk.img')))).toBe(sha(raw));
    expect(statSync(join(paths.dataDir, 'disk.img')).size).toBe(raw.length);
  });

  it('form: the file part of a multipart body, the other parts skipped', async () => {
    const { s, paths } = await start('form');
    const b = 'XyZbOuNdArY42';
    const body = Buffer.concat([
      Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n`),
      Buffer.from(
        `--${b}\r\nContent-Disposition: form-data; name="file"; filename="d.qcow2"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      qcow2,
      Buffer.from(`\r\n--${b}--\r\n`),
    ]);
    const r = await post(s.port, '/v1beta1/upload-form', body, {
      headers: { 'content-type': `multipart/form-data; boundary=${b}` },
    });
    expect(r.status).toBe(200);
    await s.done;
    expect(sha(readFileSync(join(paths.dataDir, 'disk.img')))).toBe(sha(raw));
  });

  it('stops at its deadline when no upload came (the controller then starts a new pod)', async () => {
    const { s, paths } = await start('deadline', undefined, new Date(Date.now() + 300));
    expect(await s.done).toEqual({ deadlinePassed: true });
    expect(existsSync(join(paths.dataDir, 'disk.img'))).toBe(false);
  });
});
