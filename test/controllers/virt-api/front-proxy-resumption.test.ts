/**
 * A resumed TLS session without a client certificate is not a front proxy: node reports
 * such a socket `authorized` (OpenSSL verified nothing, so nothing failed), and virt-api
 * took the X-Remote-User headers of any caller who reconnected with a session ticket.
 */
import { Agent, request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtApi } from '../../../src/controllers/virt-api/server';
import { startVirtApiFixture, type VirtApiFixture } from './virt-api-fixture';

let fixture: VirtApiFixture;
let api: VirtApi;
let ca: Buffer;
let proxy: VirtApiFixture['proxy'];

beforeAll(async () => {
  fixture = await startVirtApiFixture('kvts-virtapi-resume-');
  ({ api, ca, proxy } = fixture);
});
afterAll(async () => {
  await fixture?.close();
});

describe('virt-api front-proxy authentication and TLS session resumption', () => {
  it('refuses a resumed session that never presented a client certificate', async () => {
    // keepAlive off: every request a new connection; the agent resumes the first's session.
    const agent = new Agent({ keepAlive: false, maxCachedSessions: 10 });
    const get = () =>
      new Promise<{ status: number; message: string; reused: boolean }>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: api.port,
            path: '/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/a/guestosinfo',
            ca,
            agent,
            headers: { 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters' },
          },
          (res) => {
            let t = '';
            res.on('data', (c: Buffer) => {
              t += c.toString();
            });
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                message: JSON.parse(t).message,
                reused: (res.socket as import('node:tls').TLSSocket).isSessionReused(),
              }),
            );
          },
        );
        req.on('error', reject).end();
      });
    const first = await get();
    expect(first.reused).toBe(false);
    expect(first.status).toBe(401);
    const resumed = await get();
    expect(resumed.reused).toBe(true);
    expect(resumed.status).toBe(401);
    expect(resumed.message).toBe('no valid front-proxy client certificate');
    agent.destroy();
  });

  it('still accepts a resumed session that did present the front proxy certificate', async () => {
    const agent = new Agent({ keepAlive: false, maxCachedSessions: 10, ...proxy });
    const get = () =>
      new Promise<{ status: number; message: string; reused: boolean }>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: api.port,
            path: '/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/a/guestosinfo',
            ca,
            agent,
            ...proxy,
            headers: { 'X-Remote-User': 'alice' },
          },
          (res) => {
            let t = '';
            res.on('data', (c: Buffer) => {
              t += c.toString();
            });
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                message: JSON.parse(t).message,
                reused: (res.socket as import('node:tls').TLSSocket).isSessionReused(),
              }),
            );
          },
        );
        req.on('error', reject).end();
      });
    const first = await get();
    const resumed = await get();
    expect(resumed.reused).toBe(true);
    // Past authentication (the object lookup fails in this test: no API server).
    for (const r of [first, resumed]) expect(r.status).not.toBe(401);
    agent.destroy();
  });
});
