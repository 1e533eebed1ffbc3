/**
 * The web console's server against an in-memory store: the session token and cookie, the
 * Host and Origin checks (DNS rebinding, CSRF), websockets refused without the session,
 * only the console's own paths served, actions reaching the target's subresources, and
 * the watch stream.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { Target } from '../../../src/cli/commands/virtctl/target';
import { UiBackend } from '../../../src/cli/ui/backend';
import { hostsFor, startUiServer, type UiServer } from '../../../src/cli/ui/server';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';

interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function request(
  base: string,
  path: string,
  o: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(path, base),
      { method: o.method ?? 'GET', headers: o.headers },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

describe('kubevirt-ts ui server', () => {
  let store: EmbeddedStore;
  let server: UiServer;
  let cookie = '';
  const calls: string[] = [];
  let assets = '';

  beforeAll(async () => {
    store = await EmbeddedStore.open();
    await store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'vm1', namespace: 'default' },
      spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
    } as KubeObject);
    const target: Target = {
      client: store,
      namespace: 'default',
      where: 'test',
      subresource: async (method, ns, name, sub) => {
        calls.push(`${method} ${ns}/${name}/${sub}`);
        if (name !== 'vm1') throw new Error(`VirtualMachineInstance ${ns}/${name} not found`);
        return {} as never;
      },
      close: () => {},
    };
    assets = mkdtempSync(join(tmpdir(), 'kvts-ui-assets-'));
    writeFileSync(join(assets, 'app.js'), 'console.log("app")');
    writeFileSync(join(assets, 'app.css'), 'body{}');
    server = await startUiServer({ backend: new UiBackend(target), assetsDir: assets });
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    if (assets) rmSync(assets, { recursive: true, force: true });
  });

  it("answers to its own Host only: loopback and localhost; a wildcard address adds the host's", () => {
    expect(hostsFor('127.0.0.1', 8080)).toEqual(['127.0.0.1:8080', 'localhost:8080']);
    expect(hostsFor('::1', 8080)).toEqual(['[::1]:8080', 'localhost:8080']);
    const wide = hostsFor('0.0.0.0', 8080);
    expect(wide).toContain('127.0.0.1:8080');
    expect(wide).not.toContain('evil.example:8080');
  });

  it('listens on loopback and prints a URL with a long random token', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);
  });

  it('refuses every request without the session with 401, and a wrong token too', async () => {
    for (const path of ['/', '/api/info', '/api/vms/default/vm1', '/assets/app.js', '/?token=wrong']) {
      const r = await request(server.origin, path);
      expect(r.status, path).toBe(401);
      expect(r.body).toContain('no session');
    }
    const bad = await request(server.origin, '/api/info', { headers: { cookie: 'kvts_ui_session=forged' } });
    expect(bad.status).toBe(401);
  });

  it('trades the token for an HttpOnly SameSite=Strict cookie and drops it from the URL', async () => {
    const r = await request(server.origin, new URL(server.url).pathname + new URL(server.url).search);
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe('/');
    const set = String(r.headers['set-cookie']);
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    cookie = set.split(';')[0] as string;
    const page = await request(server.origin, '/', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('/assets/app.js');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    const info = await request(server.origin, '/api/info', { headers: { cookie } });
    expect(JSON.parse(info.body)).toEqual({ where: 'test', namespace: 'default' });
  });

  it('refuses a foreign Host (DNS rebinding) even with the cookie', async () => {
    const r = await request(server.origin, '/api/info', { headers: { cookie, host: 'evil.example:80' } });
    expect(r.status).toBe(403);
  });

  it('refuses state changes from another origin or none (CSRF); serves them from its own', async () => {
    const path = '/api/vms/default/vm1/pause';
    const foreign = await request(server.origin, path, {
      method: 'PUT',
      headers: { cookie, origin: 'http://evil.example' },
    });
    expect(foreign.status).toBe(403);
    const none = await request(server.origin, path, { method: 'PUT', headers: { cookie } });
    expect(none.status).toBe(403);
    expect(calls).toEqual([]);
    const ok = await request(server.origin, path, {
      method: 'PUT',
      headers: { cookie, origin: server.origin },
    });
    expect(ok.status).toBe(200);
    expect(calls).toEqual(['PUT default/vm1/pause']);
    // GET has no side effects: an action by GET is not a route.
    const get = await request(server.origin, path, { headers: { cookie } });
    expect(get.status).toBe(404);
  });

  it("passes the API's error on as it said it", async () => {
    const r = await request(server.origin, '/api/vms/default/nope/unpause', {
      method: 'PUT',
      headers: { cookie, origin: server.origin },
    });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).message).toBe('VirtualMachineInstance default/nope not found');
    const missing = await request(server.origin, '/api/vms/default/nope', { headers: { cookie } });
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body).message).toMatch(/nope/);
  });

  it('refuses a YAML replace that renames the VM, naming the field', async () => {
    const r = await request(server.origin, '/api/vms/default/vm1', {
      method: 'PUT',
      headers: { cookie, origin: server.origin, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'VirtualMachine', metadata: { name: 'other', namespace: 'default' } }),
    });
    expect(r.status).toBe(422);
    const status = JSON.parse(r.body);
    expect(status.message).toBe('metadata.name and metadata.namespace must stay default/vm1');
    expect(status.details.causes[0].field).toBe('metadata.name');
  });

  it("answers the usage graphs' path with 404 and the way to get them where no source is set (a cluster without --prometheus)", async () => {
    const r = await request(server.origin, '/api/vms/default/vm1/usage', { headers: { cookie } });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).message).toContain('kubevirt-ts ui --prometheus URL');
  });

  it('lists only the kinds it offers (VMIs, migrations, DataVolumes, snapshots), and the create form its catalog', async () => {
    const vmis = await request(server.origin, '/api/list/vmis?namespace=default', { headers: { cookie } });
    expect(vmis.status).toBe(200);
    expect(JSON.parse(vmis.body)).toEqual({ items: [] });
    for (const kind of ['secrets', 'pods', 'constructor', '__proto__']) {
      const r = await request(server.origin, `/api/list/${kind}`, { headers: { cookie } });
      expect(r.status, kind).toBe(404);
    }
    const badNs = await request(server.origin, '/api/list/vmis?namespace=..%2Fsecrets', {
      headers: { cookie },
    });
    expect(badNs.status).toBe(400);
    const catalog = await request(server.origin, '/api/catalog?namespace=default', { headers: { cookie } });
    expect(JSON.parse(catalog.body)).toEqual({ instancetypes: [], preferences: [] });
  });

  it('is no open proxy: paths outside the console API are 404', async () => {
    for (const path of [
      '/api/v1/secrets',
      '/apis/kubevirt.io/v1/virtualmachines',
      '/api/vms/default/vm1/exec',
      '/assets/../package.json',
    ]) {
      const r = await request(server.origin, path, { headers: { cookie } });
      expect(r.status, path).toBe(404);
    }
  });

  it('refuses websockets without the session (401) or from another origin (403)', async () => {
    const url = `${server.origin.replace('http', 'ws')}/api/vms/default/vm1/console`;
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(url, { headers });
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => {
          ws.close();
          resolve(101);
        });
        ws.on('error', () => {});
      });
    expect(await status({ origin: server.origin })).toBe(401);
    expect(await status({ cookie, origin: 'http://evil.example' })).toBe(403);
  });

  it('streams the watched VMs as server-sent events', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const req = http.get(
        new URL('/api/watch?kind=vm&namespace=default', server.origin),
        { headers: { cookie } },
        (res) => {
          expect(res.headers['content-type']).toBe('text/event-stream');
          let buf = '';
          res.on('data', (c) => {
            buf += c;
            if (buf.includes('"vm1"')) {
              req.destroy();
              resolve(buf);
            }
          });
        },
      );
      req.on('error', reject);
    });
    const line = text.split('\n').find((l) => l.startsWith('data: ')) as string;
    const e = JSON.parse(line.slice(6));
    expect(e.type).toBe('ADDED');
    expect(e.object.metadata.name).toBe('vm1');
  });
});
