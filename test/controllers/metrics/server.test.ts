/**
 * The metrics and health server: /metrics in the text format with its content type,
 * /healthz, /readyz following the readiness check, 404 and 405 otherwise, HTTPS with a
 * certificate and key file.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ComponentRegistry } from '../../../src/controllers/metrics/registry';
import { serveMetrics } from '../../../src/controllers/metrics/server';

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
});
