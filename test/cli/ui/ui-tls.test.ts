/**
 * The web console off loopback: refused without TLS; with a certificate it serves HTTPS,
 * its cookie is Secure and only its https origin may change anything.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Target } from '../../../src/cli/commands/virtctl/target';
import { UiBackend } from '../../../src/cli/ui/backend';
import { startUiServer, type UiServer } from '../../../src/cli/ui/server';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';

function get(url: string, ca: Buffer, headers: Record<string, string> = {}, method = 'GET') {
  return new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
    const req = https.request(url, { ca, headers, method }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('kubevirt-ts ui with TLS', () => {
  let dir = '';
  let store: EmbeddedStore;
  let backend: UiBackend;
  let server: UiServer | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-ui-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    writeFileSync(join(dir, 'app.js'), '');
    store = await EmbeddedStore.open();
    const target: Target = {
      client: store,
      namespace: 'default',
      where: 'test',
      subresource: async () => ({}) as never,
      close: () => {},
    };
    backend = new UiBackend(target);
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses an address off loopback without TLS', async () => {
    await expect(startUiServer({ backend, address: '0.0.0.0', assetsDir: dir })).rejects.toThrow(
      '--address 0.0.0.0: off loopback the console serves HTTPS only: give --tls-cert and --tls-key',
    );
  });

  it('serves HTTPS with a Secure cookie and checks the https origin', async () => {
    const ca = readFileSync(join(dir, 'cert.pem'));
    server = await startUiServer({
      backend,
      assetsDir: dir,
      tls: { cert: ca, key: readFileSync(join(dir, 'key.pem')) },
    });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/\?token=/);
    const first = await get(server.url, ca);
    expect(first.status).toBe(303);
    const set = String(first.headers['set-cookie']);
    expect(set).toMatch(/; Secure/);
    const cookie = set.split(';')[0] as string;
    expect((await get(`${server.origin}/api/info`, ca, { cookie })).status).toBe(200);
    const plainOrigin = server.origin.replace('https', 'http');
    const put = (origin: string) =>
      get(`${server?.origin}/api/vms/default/nope/pause`, ca, { cookie, origin }, 'PUT');
    expect((await put(plainOrigin)).status).toBe(403);
    // Its own origin passes the check (the VM does not exist: the API's 404).
    expect((await put(server.origin)).status).not.toBe(403);
  });
});
