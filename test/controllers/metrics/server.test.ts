/**
 * The metrics and health server: /metrics in the text format with its content type,
 * /healthz, /readyz following the readiness check, 404 and 405 otherwise, HTTPS with a
 * certificate and key file (re-read when they change, a self-signed fallback while they
 * are missing), retrying a port in use when asked to.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { ComponentRegistry } from '../../../src/controllers/metrics/registry';
import { serveMetrics } from '../../../src/controllers/metrics/server';
import { createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';
import { waitFor } from '../../support/wait';

describe('serveMetrics', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvts-metrics-tls-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves /metrics, /healthz, /readyz on loopback HTTP', async () => {
    const reg = new ComponentRegistry(['kubevirt_virt_handler_ready_status']);
    reg.gauge('kubevirt_virt_handler_ready_status').set(1);
    let ready = false;
    const s = await serveMetrics({ sources: [reg], ready: () => ready });
    try {
      expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const m = await fetch(`${s.url}/metrics`);
      expect(m.status).toBe(200);
      expect(m.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const body = await m.text();
      expect(body).toContain(
        '# TYPE kubevirt_virt_handler_ready_status gauge\nkubevirt_virt_handler_ready_status 1',
      );
      expect(body).toMatch(/kubevirt_info\{goversion="node[\d.]+",kubeversion="v0\.1\.0"\} 1/);
      expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${s.url}/readyz`)).status).toBe(503);
      ready = true;
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${s.url}/nope`)).status).toBe(404);
      expect((await fetch(`${s.url}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      await s.close();
    }
  });

  it('serves HTTPS with the given certificate and key', async () => {
    const cert = join(dir, 'tls.crt');
    const key = join(dir, 'tls.key');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    const s = await serveMetrics({
      sources: [new ComponentRegistry([])],
      tls: { certFile: cert, keyFile: key },
    });
    try {
      expect(s.url).toMatch(/^https:\/\//);
      const body = await new Promise<string>((resolve, reject) => {
        request(`${s.url}/metrics`, { rejectUnauthorized: false }, (res) => {
          let b = '';
          res.on('data', (d) => {
            b += d;
          });
          res.on('end', () => resolve(b));
        })
          .on('error', reject)
          .end();
      });
      expect(body).toContain('# TYPE kubevirt_info gauge');
    } finally {
      await s.close();
    }
  });

  /** The certificate the server presents (its subject CN) and the /metrics status. */
  const presented = (url: string) =>
    new Promise<{ cn: string; status: number }>((resolve, reject) => {
      const req = request(`${url}/metrics`, { rejectUnauthorized: false, agent: false }, (res) => {
        const cert = (res.socket as TLSSocket).getPeerCertificate();
        res.resume();
        res.on('end', () => resolve({ cn: String(cert.subject?.CN), status: res.statusCode ?? 0 }));
      });
      req.on('error', reject).end();
    });

  it('serves the fallback pair while the files are missing, then the files once they appear', async () => {
    const sub = mkdtempSync(join(dir, 'fallback-'));
    const cert = join(sub, 'tls.crt');
    const key = join(sub, 'tls.key');
    const lines: string[] = [];
    const s = await serveMetrics({
      sources: [new ComponentRegistry([])],
      tls: {
        certFile: cert,
        keyFile: key,
        fallback: async () => {
          const ca = await createCA('fallback-ca', new Date(), 3_600_000);
          return createLeaf(ca, { commonName: 'fallback', usage: 'server' }, new Date(), 3_600_000);
        },
      },
      log: (m) => lines.push(m),
    });
    try {
      expect(await presented(s.url)).toEqual({ cn: 'fallback', status: 200 });
      expect(lines[0]).toMatch(
        /^metrics: certificate ".*tls\.crt": ENOENT.*serving a self-signed certificate until the files appear$/,
      );
      // As a Secret volume appears: both files written, then picked up by the watcher.
      const ca = await createCA('real-ca', new Date(), 3_600_000);
      const leaf = await createLeaf(
        ca,
        { commonName: 'from-the-secret', usage: 'server' },
        new Date(),
        3_600_000,
      );
      writeFileSync(key, leaf.key);
      writeFileSync(cert, leaf.cert);
      const now = await waitFor(
        'the files served',
        async () => ((await presented(s.url)).cn === 'from-the-secret' ? true : undefined),
        10_000,
        200,
      );
      expect(now).toBe(true);
      expect(lines).toContain('metrics: serving certificate reloaded');
    } finally {
      await s.close();
    }
  });

  it('without a fallback, unreadable files are an error naming the file', async () => {
    await expect(
      serveMetrics({ sources: [], tls: { certFile: join(dir, 'none.crt'), keyFile: join(dir, 'none.key') } }),
    ).rejects.toThrow(/^certificate ".*none\.crt": ENOENT/);
  });

  it('a port in use: fails by default; with retryInUseMs serves once the other process lets it go', async () => {
    const first = await serveMetrics({ sources: [new ComponentRegistry([])] });
    await expect(serveMetrics({ sources: [], port: first.port })).rejects.toThrow(/EADDRINUSE/);
    const lines: string[] = [];
    const second = await serveMetrics({
      sources: [new ComponentRegistry([])],
      port: first.port,
      retryInUseMs: 100,
      log: (m) => lines.push(m),
    });
    try {
      expect(second.bound()).toBe(false);
      expect(lines).toEqual([`metrics: port ${first.port} in use, retrying every 100 ms`]);
      await first.close();
      await waitFor('the second server bound', () => second.bound() || undefined, 10_000, 50);
      expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
      expect(lines[1]).toBe(`metrics: port ${first.port} free now, serving`);
    } finally {
      await second.close();
    }
  });
});
