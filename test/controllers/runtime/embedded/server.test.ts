/** The embedded store's REST server: its boundary (paths, bodies, socket permissions). */
import fs from 'node:fs';
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  BadRequestError,
  ConfigMapType,
  KubeClient,
  serveEmbeddedStore,
} from '../../../../src/controllers/runtime';
import { useEmbeddedServer } from './server-harness';

const h = useEmbeddedServer('kvts-srv-');
const raw = h.raw;

describe('embedded REST server', () => {
  it('creates its socket owner-only and refuses to replace a live one', async () => {
    expect(fs.statSync(h.server.socketPath).mode & 0o777).toBe(0o600);
    await expect(serveEmbeddedStore(h.store, h.server.socketPath)).rejects.toThrow(
      /in use by a running server/,
    );
  });

  it('answers unknown paths, kinds and subresources with a NotFound Status', async () => {
    for (const p of [
      '/nope',
      '/apis/example.com/v1/things',
      '/api/v1/namespaces/default/configmaps/x/exec',
    ]) {
      const r = await raw('GET', p);
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', reason: 'NotFound', code: 404 });
    }
    expect((await raw('GET', '/healthz')).body).toBe('ok');
  });

  it('rejects bad bodies: not JSON, wrong namespace, unknown patch type, over 3 MiB', async () => {
    const bad = await raw('POST', '/api/v1/namespaces/default/configmaps', '{nope', {
      'content-type': 'application/json',
    });
    expect(bad.status).toBe(400);
    const ns = await raw(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ metadata: { name: 'x', namespace: 'other' } }),
    );
    expect(JSON.parse(ns.body).message).toMatch(/namespace of the provided object does not match/);
    await h.store.create(ConfigMapType, { metadata: { name: 'p', namespace: 'default' } });
    const pt = await raw('PATCH', '/api/v1/namespaces/default/configmaps/p', '{}', {
      'content-type': 'text/plain',
    });
    expect(pt.status).toBe(415);
    const big = await raw('POST', '/api/v1/namespaces/default/configmaps', 'x'.repeat(3 * 1024 * 1024 + 10));
    expect(big.status).toBe(413);
  });

  it('KubeClient rejects names that would change the REST path before sending anything', async () => {
    const c = KubeClient.fromSocket(h.server.socketPath);
    try {
      for (const name of ['..', '.', 'a/b', '']) {
        await expect(c.get(ConfigMapType, name, 'default')).rejects.toBeInstanceOf(BadRequestError);
      }
      await expect(c.get(ConfigMapType, 'x', '../kube-system')).rejects.toThrow(/invalid namespace/);
      await expect(c.get(ConfigMapType, 'x')).rejects.toThrow(/ConfigMap is namespaced/);
    } finally {
      c.close();
    }
  });

  it('cuts off a watcher that stops reading instead of buffering without bound', async () => {
    const lines: string[] = [];
    let startReading!: () => void;
    const writesDone = new Promise<void>((r) => {
      startReading = r;
    });
    let opened!: () => void;
    const isOpen = new Promise<void>((r) => {
      opened = r;
    });
    const ended = new Promise<void>((resolve, reject) => {
      const req = http.request(
        {
          socketPath: h.server.socketPath,
          path: '/api/v1/namespaces/default/configmaps?watch=1&labelSelector=big%3Dyes',
        },
        (res) => {
          res.pause(); // a client that stops reading until every write is done
          opened();
          void writesDone.then(() => {
            let buf = '';
            res.on('data', (d) => {
              buf += d;
            });
            res.on('end', () => {
              lines.push(...buf.split('\n').filter(Boolean));
              resolve();
            });
            res.resume();
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
    await isOpen;
    const blob = 'x'.repeat(1024 * 1024);
    for (let i = 0; i < 20; i++) {
      await h.store.create(ConfigMapType, {
        metadata: { name: `big${i}`, namespace: 'default', labels: { big: 'yes' } },
        data: { blob },
      } as never);
    }
    startReading();
    await ended;
    const last = JSON.parse(lines[lines.length - 1]);
    expect(last.type).toBe('ERROR');
    expect(last.object.message).toMatch(/watch client too slow/);
    expect(lines.length).toBeLessThan(21);
  });
});
