/**
 * virt-handler's REST server: mutual TLS (a caller without a client certificate from the
 * KubeVirt CA is refused at the handshake), launcher calls by upstream's paths, and the
 * console stream (a websocket under plain.kubevirt.io relaying the guest's unix socket).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LauncherClient } from '../../../src/controllers/launcher-protocol/client';
import { VmiNotOnNodeError } from '../../../src/controllers/virt-handler/handler';
import { type HandlerRestServer, serveHandlerRest } from '../../../src/controllers/virt-handler/rest-server';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';

const dir = mkdtempSync(join(tmpdir(), 'kvts-hrest-'));
let server: HandlerRestServer;
let guest: Server;
let ca: CertFiles;
let good: CertFiles;
let stranger: CertFiles;
let otherName: CertFiles;
let serverUsage: CertFiles;
const calls: string[] = [];

const launcher = {
  pauseVirtualMachine: async (vmi: { metadata: { name: string } }) => {
    calls.push(`pause ${vmi.metadata.name}`);
  },
  freezeVirtualMachine: async (vmi: { metadata: { name: string } }, seconds: number) => {
    calls.push(`freeze ${vmi.metadata.name} ${seconds}`);
  },
  getGuestInfo: async () => ({
    hostname: 'tiny',
    userList: [{ userName: 'root' }],
    fsInfo: { disks: [{ diskName: 'vda' }] },
  }),
} as unknown as LauncherClient;

function call(path: string, method: string, cert?: CertFiles, body?: unknown) {
  return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method,
        ca: readFileSync(ca.cert),
        cert: cert ? readFileSync(cert.cert) : undefined,
        key: cert ? readFileSync(cert.key) : undefined,
        checkServerIdentity: () => undefined,
      },
      (res) => {
        let t = '';
        res.on('data', (c: Buffer) => {
          t += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(t) }));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

beforeAll(async () => {
  ca = makeCa(dir, 'kubevirt-ca');
  const other = makeCa(dir, 'other-ca');
  const serving = issue(dir, ca, 'handler', 'kubevirt.io:system:node:virt-handler', ['IP:127.0.0.1']);
  good = issue(dir, ca, 'api', 'kubevirt.io:system:client:virt-handler');
  stranger = issue(dir, other, 'stranger', 'kubevirt.io:system:client:virt-handler');
  // Signed by the KubeVirt CA but not virt-api's client identity: another name, or the
  // right name without the clientAuth usage (a serving certificate).
  otherName = issue(dir, ca, 'other-name', 'kubevirt.io:system:client:someone-else');
  serverUsage = issue(dir, ca, 'server-usage', 'kubevirt.io:system:client:virt-handler', ['DNS:x']);
  // The guest's serial console: echoes what it gets, upper-cased.
  guest = createServer((s) => s.on('data', (d) => s.write(d.toString().toUpperCase())));
  await new Promise<void>((r) => guest.listen(join(dir, 'virt-serial0'), r));
  server = await serveHandlerRest({
    host: '127.0.0.1',
    port: 0,
    tls: { ...serving, ca: ca.cert },
    launchers: {
      launcherOf: async (ns, name) => {
        if (name !== 'vmi1')
          throw new VmiNotOnNodeError(`VirtualMachineInstance ${ns}/${name} is not on node n1`);
        return { vmi: { metadata: { name, namespace: ns } }, client: launcher, socketsDir: dir };
      },
    },
  });
});
afterAll(async () => {
  await server?.close();
  guest?.close();
  rmSync(dir, { recursive: true, force: true });
});

const base = '/v1/namespaces/default/virtualmachineinstances';

describe('virt-handler REST server', () => {
  it('refuses a caller without a client certificate, and one from another CA', async () => {
    await expect(call(`${base}/vmi1/guestosinfo`, 'GET')).rejects.toThrow(
      /certificate|socket hang up|ECONNRESET|alert/i,
    );
    await expect(call(`${base}/vmi1/guestosinfo`, 'GET', stranger)).rejects.toThrow(
      /certificate|socket hang up|ECONNRESET|alert|unknown ca/i,
    );
    expect(calls).toEqual([]);
  });

  it("refuses a KubeVirt-CA certificate that is not virt-api's client identity (name and clientAuth usage)", async () => {
    await expect(call(`${base}/vmi1/pause`, 'PUT', otherName)).rejects.toThrow(
      /certificate|socket hang up|ECONNRESET|alert/i,
    );
    await expect(call(`${base}/vmi1/pause`, 'PUT', serverUsage)).rejects.toThrow(
      /certificate|socket hang up|ECONNRESET|alert/i,
    );
    expect(calls).toEqual([]);
  });

  it('with the KubeVirt client certificate: pause reaches the launcher, guest info and user list answer', async () => {
    const p = await call(`${base}/vmi1/pause`, 'PUT', good);
    expect(p.status).toBe(200);
    expect(calls).toEqual(['pause vmi1']);
    const info = await call(`${base}/vmi1/guestosinfo`, 'GET', good);
    expect(info.body.hostname).toBe('tiny');
    expect((await call(`${base}/vmi1/userlist`, 'GET', good)).body).toEqual({
      items: [{ userName: 'root' }],
    });
    expect((await call(`${base}/vmi1/filesystemlist`, 'GET', good)).body).toEqual({
      items: [{ diskName: 'vda' }],
    });
    const missing = await call(`${base}/other/pause`, 'PUT', good);
    expect(missing.status).toBe(404);
    expect(missing.body.message).toMatch(/not on node n1/);
  });

  it('answers an upgrade to an inherited property name (constructor, __proto__) with 404 and keeps serving', async () => {
    for (const op of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const ws = new WebSocket(`wss://127.0.0.1:${server.port}${base}/vmi1/${op}`, ['plain.kubevirt.io'], {
        ca: readFileSync(ca.cert),
        cert: readFileSync(good.cert),
        key: readFileSync(good.key),
      });
      const status = await new Promise<number>((r) => {
        ws.once('unexpected-response', (_req, res) => r(res.statusCode ?? 0));
        ws.once('open', () => r(101));
        ws.once('error', () => r(-1));
      });
      expect(status, op).toBe(404);
      ws.terminate();
      const plain = await call(`${base}/vmi1/${op}`, 'GET', good);
      expect(plain.status, op).toBe(404);
    }
    // The process is alive and still serves.
    expect((await call(`${base}/vmi1/guestosinfo`, 'GET', good)).status).toBe(200);
  });

  it('refuses an unfreezeTimeout a timer cannot hold (over 596h31m23s) with 400 naming the field', async () => {
    calls.length = 0;
    for (const t of ['596h31m24s', `${2 ** 31}s`, `${2 ** 53}h`]) {
      const r = await call(`${base}/vmi1/freeze`, 'PUT', good, { unfreezeTimeout: t });
      expect(r.status, t).toBe(400);
      expect(r.body.message).toMatch(/^unfreezeTimeout: .*maximum of 2147483s/);
    }
    expect(calls).toEqual([]);
    const max = await call(`${base}/vmi1/freeze`, 'PUT', good, { unfreezeTimeout: '596h31m23s' });
    expect(max.status).toBe(200);
    expect(calls).toEqual(['freeze vmi1 2147483']);
    calls.length = 0;
  });

  it('streams the console over a plain.kubevirt.io websocket', async () => {
    const ws = new WebSocket(`wss://127.0.0.1:${server.port}${base}/vmi1/console`, ['plain.kubevirt.io'], {
      ca: readFileSync(ca.cert),
      cert: readFileSync(good.cert),
      key: readFileSync(good.key),
      rejectUnauthorized: true,
    });
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    expect(ws.protocol).toBe('plain.kubevirt.io');
    const got = new Promise<string>((r) => ws.once('message', (d: Buffer) => r(d.toString())));
    ws.send(Buffer.from('hello'));
    expect(await got).toBe('HELLO');
    ws.close();
  });
});
