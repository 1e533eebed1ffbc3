/**
 * The importer's nbdkit path against loopback servers and the real qemu-img and nbdkit: a
 * server that answers HEAD with `Accept-Ranges: bytes` is streamed through nbdkit's curl
 * plugin (every request with the DataVolume's basic auth and extra headers; https trusting
 * the certConfigMap's CA), a read failing mid-stream is a plain error naming the URL, and
 * nothing is left in scratch. Skipped where nbdkit's curl plugin is not installed
 * (scripts/setup-host.sh installs it).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FatalImportError, runImport } from '../../../src/controllers/cdi-importer';
import { nbdkitCurlAvailable, startNbdkitCurl } from '../../../src/controllers/cdi-importer/nbdkit-curl';
import { issue, makeCa } from '../../support/tls-certs';
import { httpImport, importTarget, sourceDisks } from './importer-fixture';

const AUTH = `Basic ${Buffer.from('me:pw').toString('base64')}`;

describe.skipIf(!nbdkitCurlAvailable())(
  'cdi-importer through nbdkit (qemu-img, nbdkit, loopback servers)',
  () => {
    let dir: string;
    let raw: Buffer;
    const files = new Map<string, Buffer>();
    /** `METHOD path range` of every request, and whether it carried the auth and the header. */
    const seen: Array<{ line: string; auth: boolean; token: boolean }> = [];
    let http: Server;
    let https: Server;
    let base: string;
    let secureBase: string;
    let certDir: string;
    let sockets: string;
    let savedTmp: string | undefined;

    /** /kit/<file>: HEAD with Accept-Ranges, ranges; /plain/<file>: ranges without saying so; /flaky/<file>: 500 past 1 MiB. */
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      const m = /^\/(kit|plain|flaky|auth)(\/.*)$/.exec(req.url ?? '');
      const data = m && files.get(m[2]);
      seen.push({
        line: `${req.method} ${req.url} ${req.headers.range ?? ''}`.trim(),
        auth: req.headers.authorization === AUTH,
        token: req.headers['x-token'] === 'abc',
      });
      if (!m || !data) {
        res.writeHead(404).end();
        return;
      }
      if (m[1] === 'auth' && (req.headers.authorization !== AUTH || req.headers['x-token'] !== 'abc')) {
        res.writeHead(401).end();
        return;
      }
      const ranges = m[1] === 'plain' ? {} : { 'accept-ranges': 'bytes' };
      const r = /^bytes=(\d+)-(\d+)?$/.exec(req.headers.range ?? '');
      if (!r) {
        res
          .writeHead(200, { 'content-length': data.length, ...ranges })
          .end(req.method === 'HEAD' ? undefined : data);
        return;
      }
      const from = Number(r[1]);
      if (m[1] === 'flaky' && from >= 1 << 20) {
        res.writeHead(500).end();
        return;
      }
      const to = Math.min(r[2] === undefined ? data.length - 1 : Number(r[2]), data.length - 1);
      res
        .writeHead(206, {
          'content-length': to - from + 1,
          'content-range': `bytes ${from}-${to}/${data.length}`,
          ...ranges,
        })
        .end(data.subarray(from, to + 1));
    };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'cdi-importer-nbdkit-'));
      // The exports' socket directories go under TMPDIR (socket-dir.ts): this file's own.
      sockets = join(dir, 'tmp');
      mkdirSync(sockets);
      savedTmp = process.env.TMPDIR;
      process.env.TMPDIR = sockets;
      const disks = sourceDisks(dir);
      raw = disks.raw;
      files.set('/disk.qcow2', disks.qcow2);
      files.set('/disk.raw', raw);
      http = createServer(handler);
      await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
      const ca = makeCa(join(dir, 'pki'), 'source-ca');
      const leaf = issue(join(dir, 'pki'), ca, 'source', 'source', ['IP:127.0.0.1']);
      https = createHttpsServer({ cert: readFileSync(leaf.cert), key: readFileSync(leaf.key) }, handler);
      await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
      secureBase = `https://127.0.0.1:${(https.address() as AddressInfo).port}`;
      certDir = join(dir, 'certs');
      mkdirSync(certDir);
      writeFileSync(join(certDir, 'ca.pem'), readFileSync(ca.cert));
    });
    afterAll(() => {
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
      http?.close();
      https?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    const target = (name: string) => importTarget(dir, name);
    const req = httpImport;

    it('streams qcow2 through nbdkit with the basic auth and extra headers on every request', async () => {
      const t = target('auth');
      const lines: string[] = [];
      seen.length = 0;
      const out = await runImport(
        req({
          endpoint: `${base}/auth/disk.qcow2`,
          imageSizeBytes: 8 << 20,
          basicAuth: { user: 'me', password: 'pw' },
          extraHeaders: ['X-Token: abc'],
        }),
        t,
        (l) => lines.push(l),
      );
      expect(out).toEqual({ diskBytes: 8 << 20, format: 'qcow2' });
      const disk = readFileSync(join(t.dataDir, 'disk.img'));
      expect(disk.length).toBe(8 << 20);
      expect(disk.subarray(0, raw.length).equals(raw)).toBe(true);
      const size = files.get('/disk.qcow2')!.length;
      expect(lines).toContain(`streaming ${size} bytes from ${base}/auth/disk.qcow2 through nbdkit`);
      // nbdkit's own HEAD and range GETs (past the importer's probe and HEAD), all authorised.
      const gets = seen.filter((s) => s.line.startsWith('GET') && !s.line.endsWith('bytes=0-5'));
      expect(gets.length).toBeGreaterThan(0);
      expect(seen.every((s) => s.auth && s.token)).toBe(true);
      expect(readdirSync(t.scratchDir)).toEqual([]);
      expect(readdirSync(sockets)).toEqual([]);
      expect(existsSync(join(t.dataDir, 'disk.img.tmp'))).toBe(false);
    });

    it('https with the certConfigMap CA; a server not advertising ranges keeps node export', async () => {
      const lines: string[] = [];
      const t = target('https');
      await runImport(req({ endpoint: `${secureBase}/kit/disk.raw`, certDir }), t, (l) => lines.push(l));
      expect(readFileSync(join(t.dataDir, 'disk.img')).equals(raw)).toBe(true);
      expect(lines).toContain(`streaming ${raw.length} bytes from ${secureBase}/kit/disk.raw through nbdkit`);
      const t2 = target('plain');
      await runImport(req({ endpoint: `${base}/plain/disk.raw` }), t2, (l) => lines.push(l));
      expect(readFileSync(join(t2.dataDir, 'disk.img')).equals(raw)).toBe(true);
      expect(lines).toContain(`streaming ${raw.length} bytes from ${base}/plain/disk.raw by ranges`);
      expect(readdirSync(t.scratchDir)).toEqual([]);
      expect(readdirSync(sockets)).toEqual([]);
    });

    it('a read failing mid-stream is a plain (retried) error naming the URL, leaving nothing', async () => {
      const t = target('flaky');
      const err = await runImport(req({ endpoint: `${base}/flaky/disk.raw` }), t).catch((e) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(FatalImportError);
      expect(err.message).toMatch(new RegExp(`^reading ${base}/flaky/disk\\.raw: .*500`));
      expect(existsSync(join(t.dataDir, 'disk.img'))).toBe(false);
      expect(readdirSync(t.dataDir)).toEqual([]);
      expect(readdirSync(t.scratchDir)).toEqual([]);
      expect(readdirSync(sockets)).toEqual([]);
    });

    it('a scratch directory deeper than a unix socket path may be (as in local mode) streams both ways', async () => {
      for (const path of ['kit', 'plain']) {
        const t = target(`${path}-${'deep'.repeat(30)}`);
        expect(t.scratchDir.length).toBeGreaterThan(108);
        const lines: string[] = [];
        await runImport(req({ endpoint: `${base}/${path}/disk.raw` }), t, (l) => lines.push(l));
        expect(readFileSync(join(t.dataDir, 'disk.img')).equals(raw)).toBe(true);
        expect(lines.filter((l) => l.startsWith('streaming'))).toHaveLength(1);
        expect(readdirSync(sockets)).toEqual([]);
      }
    });

    it('nbdkit missing when started: a clear error, nothing left', async () => {
      const path = process.env.PATH;
      process.env.PATH = join(dir, 'no-such-bin');
      try {
        await expect(startNbdkitCurl({ url: `${base}/kit/disk.raw` })).rejects.toThrow(
          'nbdkit did not start: spawn nbdkit ENOENT',
        );
      } finally {
        process.env.PATH = path;
      }
      expect(readdirSync(sockets)).toEqual([]);
    });

    it('refuses a header line with a line break before starting nbdkit', async () => {
      await expect(
        startNbdkitCurl({ url: `${base}/kit/disk.raw`, extraHeaders: ['X-Token: abc\r\nHost: elsewhere'] }),
      ).rejects.toThrow('extra header "X-Token: abc\\r\\nHost: elsewhere" is not one "Name: value" line');
      expect(readdirSync(sockets)).toEqual([]);
    });
  },
);
