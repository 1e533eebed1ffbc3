/**
 * The importer against a loopback HTTP server and the real qemu-img: qcow2 and
 * gzip-compressed raw land as a raw disk.img of the asked size, a restart starts from a
 * clean target, and a wrong checksum, a backing file and an unreachable URL fail as they
 * should (fatal or not).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FatalImportError, importRequestFromEnv, runImport } from '../../../src/controllers/cdi-importer';
import { BLOCK_BYTES } from '../../../src/controllers/cdi-importer/http-ranges';
import { httpImport, importTarget, sourceDisks } from './importer-fixture';

const hasQemuImg = (() => {
  try {
    execFileSync('qemu-img', ['--version']);
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!hasQemuImg)('cdi-importer (qemu-img and a loopback server)', () => {
  let dir: string;
  let server: Server;
  let base: string;
  const files = new Map<string, Buffer>();
  const rangeRequests: string[] = [];
  let raw: Buffer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdi-importer-'));
    const disks = sourceDisks(dir);
    raw = disks.raw;
    execFileSync('qemu-img', [
      'create',
      '-f',
      'qcow2',
      '-b',
      join(dir, 'src.qcow2'),
      '-F',
      'qcow2',
      join(dir, 'child.qcow2'),
    ]);
    files.set('/disk.qcow2', disks.qcow2);
    files.set('/disk.raw.gz', gzipSync(raw));
    files.set('/child.qcow2', readFileSync(join(dir, 'child.qcow2')));
    server = createServer((req, res) => {
      // /ranged/<file> answers Range requests (the streamed path); /flaky/<file> answers
      // the first (the probe) and fails the rest.
      const ranged = /^\/(ranged|flaky)(\/.*)$/.exec(req.url ?? '');
      if (ranged && files.has(ranged[2])) {
        const data = files.get(ranged[2])!;
        const r = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
        if (!r) {
          res.writeHead(200, { 'content-length': data.length }).end(data);
          return;
        }
        rangeRequests.push(`${ranged[1]} ${r[1]}-${r[2]}`);
        if (ranged[1] === 'flaky' && r[1] !== '0') {
          res.writeHead(500).end();
          return;
        }
        const from = Number(r[1]);
        const to = Math.min(Number(r[2]), data.length - 1);
        res
          .writeHead(206, {
            'content-length': to - from + 1,
            'content-range': `bytes ${from}-${to}/${data.length}`,
          })
          .end(data.subarray(from, to + 1));
        return;
      }
      const body = files.get(req.url ?? '');
      if (req.url === '/auth.qcow2') {
        if (req.headers.authorization !== `Basic ${Buffer.from('me:pw').toString('base64')}`) {
          res.writeHead(401).end();
          return;
        }
        res.end(files.get('/disk.qcow2'));
        return;
      }
      if (!body) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const target = (name: string) => importTarget(dir, name);
  const req = httpImport;

  it('qcow2 over http becomes a raw disk.img grown to the asked size, checksum verified', async () => {
    const t = target('qcow2');
    writeFileSync(join(t.dataDir, 'disk.img.tmp'), 'left by an earlier run');
    const sum = createHash('sha256').update(files.get('/disk.qcow2')!).digest('hex');
    const out = await runImport(
      req({
        endpoint: `${base}/disk.qcow2`,
        imageSizeBytes: 8 << 20,
        checksum: { algorithm: 'sha256', hex: sum },
      }),
      t,
    );
    expect(out).toEqual({ diskBytes: 8 << 20, format: 'qcow2' });
    const disk = readFileSync(join(t.dataDir, 'disk.img'));
    expect(disk.length).toBe(8 << 20);
    expect(disk.subarray(0, 4 << 20).equals(raw)).toBe(true);
    expect(existsSync(join(t.dataDir, 'disk.img.tmp'))).toBe(false);
    expect(existsSync(join(t.scratchDir, 'source'))).toBe(false);
  });

  it('a server answering ranges is streamed through the NBD export (no scratch copy); a checksum or compression downloads', async () => {
    // One block + 2 sectors of raw: qemu-img's reads cross the block boundary.
    const big = Buffer.concat([raw, raw, Buffer.from('x'.repeat(1024))]);
    expect(raw.length * 2).toBe(BLOCK_BYTES);
    files.set('/big.raw', big);
    const t = target('ranged');
    const lines: string[] = [];
    rangeRequests.length = 0;
    const out = await runImport(req({ endpoint: `${base}/ranged/big.raw` }), t, (l) => lines.push(l));
    expect(out).toEqual({ diskBytes: big.length, format: 'raw' });
    expect(readFileSync(join(t.dataDir, 'disk.img')).equals(big)).toBe(true);
    expect(lines).toContain(`streaming ${big.length} bytes from ${base}/ranged/big.raw by ranges`);
    // The probe, then whole blocks (8 MiB aligned), each once.
    expect(rangeRequests).toEqual(['ranged 0-5', 'ranged 0-8388607', 'ranged 8388608-8389631']);
    expect(readdirSync(t.scratchDir)).toEqual([]);

    const t2 = target('ranged-qcow2');
    await runImport(req({ endpoint: `${base}/ranged/disk.qcow2`, imageSizeBytes: 8 << 20 }), t2, (l) =>
      lines.push(l),
    );
    expect(readFileSync(join(t2.dataDir, 'disk.img')).subarray(0, raw.length).equals(raw)).toBe(true);

    lines.length = 0;
    const sum = createHash('sha256').update(files.get('/disk.qcow2')!).digest('hex');
    await runImport(
      req({ endpoint: `${base}/ranged/disk.qcow2`, checksum: { algorithm: 'sha256', hex: sum } }),
      target('ranged-sum'),
      (l) => lines.push(l),
    );
    await runImport(req({ endpoint: `${base}/ranged/disk.raw.gz` }), target('ranged-gz'), (l) =>
      lines.push(l),
    );
    expect(lines.filter((l) => l.startsWith('streaming'))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('downloaded') && l.includes(' from '))).toHaveLength(2);
  });

  it('a range read failing mid-stream is a plain (retried) error naming the URL', async () => {
    const t = target('flaky');
    // Past the first block, which the flaky server still serves.
    files.set('/five.raw', randomBytes(BLOCK_BYTES + (1 << 20)));
    const err = await runImport(req({ endpoint: `${base}/flaky/five.raw` }), t).catch((e) => e);
    expect(err).not.toBeInstanceOf(FatalImportError);
    expect(err.message).toBe(
      `reading ${base}/flaky/five.raw: http data source ${base}/flaky/five.raw answered 500 to a range request`,
    );
    expect(existsSync(join(t.dataDir, 'disk.img'))).toBe(false);
    expect(readdirSync(t.scratchDir)).toEqual([]);
  });

  it('gzip-compressed raw and basic auth', async () => {
    const t = target('gz');
    await runImport(req({ endpoint: `${base}/disk.raw.gz` }), t);
    expect(readFileSync(join(t.dataDir, 'disk.img')).subarray(0, raw.length).equals(raw)).toBe(true);
    const t2 = target('auth');
    await runImport(req({ endpoint: `${base}/auth.qcow2`, basicAuth: { user: 'me', password: 'pw' } }), t2);
    expect(statSync(join(t2.dataDir, 'disk.img')).size).toBeGreaterThanOrEqual(raw.length);
    await expect(runImport(req({ endpoint: `${base}/auth.qcow2` }), target('noauth'))).rejects.toThrow(
      /answered 401/,
    );
  });

  it('a wrong checksum is fatal and leaves no disk.img', async () => {
    const t = target('sum');
    const err = await runImport(
      req({ endpoint: `${base}/disk.qcow2`, checksum: { algorithm: 'md5', hex: '0'.repeat(32) } }),
      t,
    ).catch((e) => e);
    expect(err).toBeInstanceOf(FatalImportError);
    expect(err.message).toMatch(
      /^checksum mismatch: the source's md5 is [0-9a-f]{32}, the DataVolume's checksum says 0{32}$/,
    );
    expect(existsSync(join(t.dataDir, 'disk.img'))).toBe(false);
  });

  it('refuses an image with a backing file; an unreachable URL is a plain (retried) error', async () => {
    const err = await runImport(req({ endpoint: `${base}/child.qcow2` }), target('child')).catch((e) => e);
    expect(err).toBeInstanceOf(FatalImportError);
    expect(err.message).toMatch(/has a backing file/);
    const e2 = await runImport(req({ endpoint: 'http://127.0.0.1:1/x.img' }), target('unreach')).catch(
      (e) => e,
    );
    expect(e2).not.toBeInstanceOf(FatalImportError);
    expect(e2.message).toMatch(
      /^Unable to connect to http data source http:\/\/127\.0\.0\.1:1\/x\.img: .*ECONNREFUSED/,
    );
  });

  it('registry: converts the disk the init container copied into scratch; none there is a retried error', async () => {
    const t = target('registry');
    writeFileSync(join(t.scratchDir, 'registry-image'), files.get('/disk.qcow2')!);
    const out = await runImport(
      req({ source: 'registry', endpoint: 'docker://localhost/x/disk:latest', imageSizeBytes: 8 << 20 }),
      t,
    );
    expect(out).toEqual({ diskBytes: 8 << 20, format: 'qcow2' });
    expect(readFileSync(join(t.dataDir, 'disk.img')).subarray(0, raw.length).equals(raw)).toBe(true);
    expect(existsSync(join(t.scratchDir, 'registry-image'))).toBe(false);
    const err = await runImport(
      req({ source: 'registry', endpoint: 'docker://x' }),
      target('reg-none'),
    ).catch((e) => e);
    expect(err).not.toBeInstanceOf(FatalImportError);
    expect(err.message).toMatch(/^the registry image's disk was not copied to .*registry-image/);
  });

  it('blank makes a sparse disk.img of the asked size', async () => {
    const t = target('blank');
    await runImport(req({ source: 'blank', imageSizeBytes: 64 << 20 }), t);
    const st = statSync(join(t.dataDir, 'disk.img'));
    expect(st.size).toBe(64 << 20);
    expect(st.blocks * 512).toBeLessThan(1 << 20);
  });

  it('reads its request from the environment, naming a bad variable', () => {
    expect(
      importRequestFromEnv({
        IMPORTER_SOURCE: 'http',
        IMPORTER_ENDPOINT: 'https://h/x',
        IMPORTER_CHECKSUM: `sha1:${'A'.repeat(40)}`,
        IMPORTER_IMAGE_SIZE: '1024',
        IMPORTER_EXTRA_HEADERS: '["X-A: b"]',
      }),
    ).toMatchObject({
      checksum: { algorithm: 'sha1', hex: 'a'.repeat(40) },
      imageSizeBytes: 1024,
      extraHeaders: ['X-A: b'],
    });
    expect(() => importRequestFromEnv({ IMPORTER_SOURCE: 'http', IMPORTER_ENDPOINT: 'ftp://h/x' })).toThrow(
      'IMPORTER_ENDPOINT: ftp: is not http: or https:',
    );
    expect(() =>
      importRequestFromEnv({
        IMPORTER_SOURCE: 'http',
        IMPORTER_ENDPOINT: 'http://h/x',
        IMPORTER_CHECKSUM: 'crc:12',
      }),
    ).toThrow(/IMPORTER_CHECKSUM: algorithm "crc" is not one of md5, sha1, sha256, sha512/);
  });
});
