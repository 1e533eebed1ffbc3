/** The embedded REST server against hostile requests: path tricks, malformed bodies. */
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { ConfigMapType, type KubeObject, NamespaceType } from '../../../../src/controllers/runtime';
import { useEmbeddedServer } from './server-harness';

const h = useEmbeddedServer('kvts-srvh-', async (store) => {
  await store.create(NamespaceType, { metadata: { name: 'victim' } });
  await store.create(ConfigMapType, {
    metadata: { name: 'keep', namespace: 'victim' },
    data: { a: '1' },
  } as never);
});
const raw = h.raw;

describe('embedded REST server: path segments', () => {
  const dotNames = ['..', '.', '%2e%2e', '%2E%2e', '%2e', '.%2e', 'a%2fb', 'a%2Fb', '%25', 'x%252e'];

  it('refuses dot, slash and percent names on every verb and leaves the namespace and its content alone', async () => {
    for (const name of dotNames) {
      for (const [method, body, ct] of [
        ['DELETE', undefined, undefined],
        ['GET', undefined, undefined],
        ['PUT', '{"metadata":{"name":"victim"}}', 'application/json'],
        ['PATCH', '{"metadata":{"labels":{"x":"y"}}}', 'application/merge-patch+json'],
      ] as const) {
        const r = await raw(
          method,
          `/api/v1/namespaces/victim/configmaps/${name}`,
          body,
          ct ? { 'content-type': ct } : {},
        );
        expect([method, name, r.status]).toEqual([method, name, 400]);
        expect(JSON.parse(r.body).reason).toBe('BadRequest');
      }
    }
    const ns = await h.store.get(NamespaceType, 'victim');
    expect(ns.metadata?.deletionTimestamp).toBeUndefined();
    expect(ns.metadata?.labels).toBeUndefined();
    expect((await h.store.get<KubeObject & { data: object }>(ConfigMapType, 'keep', 'victim')).data).toEqual({
      a: '1',
    });
  });

  it('refuses a dot namespace segment too', async () => {
    for (const p of ['/api/v1/namespaces/../configmaps', '/api/v1/namespaces/%2e%2e/configmaps/keep']) {
      expect((await raw('GET', p)).status).toBe(400);
    }
  });

  it('answers malformed percent-encoding with 400, not 500', async () => {
    for (const p of [
      '/api/v1/namespaces/victim/configmaps/%zz',
      '/api/v1/namespaces/victim/configmaps/%E0%A4%A',
      '/api/v1/namespaces/%/configmaps',
    ]) {
      const r = await raw('GET', p);
      expect([p, r.status]).toEqual([p, 400]);
      expect(JSON.parse(r.body).message).toMatch(/percent-encoding/);
    }
  });

  it('still serves ordinary names and queries', async () => {
    const r = await raw('GET', '/api/v1/namespaces/victim/configmaps/keep?resourceVersion=0');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).data).toEqual({ a: '1' });
    const l = await raw('GET', '/api/v1/namespaces/victim/configmaps?labelSelector=a%3Db');
    expect(JSON.parse(l.body).items).toEqual([]);
  });
});

describe('embedded REST server: malformed bodies and parameters', () => {
  const cmPath = '/api/v1/namespaces/victim/configmaps';
  const json = { 'content-type': 'application/json' };

  it('answers wrongly typed metadata with 422 naming the field, never 500', async () => {
    for (const [meta, field] of [
      [{ name: 5 }, 'metadata.name'],
      [{ name: ['a'] }, 'metadata.name'],
      [{ generateName: 7 }, 'metadata.generateName'],
      [{ name: 'a', labels: ['x'] }, 'metadata.labels'],
      [{ name: 'a', labels: 'x=y' }, 'metadata.labels'],
      [{ name: 'a', labels: { x: 1 } }, 'metadata.labels[x]'],
      [{ name: 'a', annotations: { x: { y: 1 } } }, 'metadata.annotations[x]'],
      [{ name: 'a', annotations: [] }, 'metadata.annotations'],
      [{ name: 'a', finalizers: 'x/y' }, 'metadata.finalizers'],
      [{ name: 'a', finalizers: { a: 1 } }, 'metadata.finalizers'],
      [{ name: 'a', ownerReferences: { uid: 'x' } }, 'metadata.ownerReferences'],
      [{ name: 'a', ownerReferences: [null] }, 'metadata.ownerReferences[0]'],
      [
        { name: 'a', ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'n', uid: 3 }] },
        'metadata.ownerReferences[0].uid',
      ],
      [
        {
          name: 'a',
          ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'n', uid: 'u', controller: 'yes' }],
        },
        'metadata.ownerReferences[0].controller',
      ],
      ['meta', 'metadata'],
    ] as const) {
      const r = await raw('POST', cmPath, JSON.stringify({ metadata: meta }), json);
      expect([JSON.stringify(meta), r.status]).toEqual([JSON.stringify(meta), 422]);
      expect(JSON.parse(r.body).details.causes.map((c: { field: string }) => c.field)).toContain(field);
    }
  });

  it('answers wrongly typed metadata in updates, patches and applies with 4xx', async () => {
    const bad = [
      ['PUT', `${cmPath}/keep`, '{"metadata":{"name":"keep","finalizers":"x"}}', json],
      ['PUT', `${cmPath}/keep`, 'null', json],
      ['PUT', `${cmPath}/keep`, '[1]', json],
      [
        'PATCH',
        `${cmPath}/keep`,
        '{"metadata":{"ownerReferences":{"a":1}}}',
        { 'content-type': 'application/merge-patch+json' },
      ],
      ['PATCH', `${cmPath}/keep`, '{"metadata":"x"}', { 'content-type': 'application/merge-patch+json' }],
      ['PATCH', `${cmPath}/keep?fieldManager=t`, 'null', { 'content-type': 'application/apply-patch+yaml' }],
      ['PATCH', `${cmPath}/new?fieldManager=t`, 'null', { 'content-type': 'application/apply-patch+yaml' }],
      ['PATCH', `${cmPath}/keep?fieldManager=t`, '- 1', { 'content-type': 'application/apply-patch+yaml' }],
      [
        'PATCH',
        `${cmPath}/keep?fieldManager=t`,
        'metadata: x',
        { 'content-type': 'application/apply-patch+yaml' },
      ],
      ['PATCH', `${cmPath}/keep`, '[null]', { 'content-type': 'application/json-patch+json' }],
      [
        'PATCH',
        `${cmPath}/keep`,
        '[{"op":"copy","path":"/data/b"}]',
        { 'content-type': 'application/json-patch+json' },
      ],
      ['POST', cmPath, 'null', json],
      ['POST', cmPath, '"x"', json],
    ] as const;
    for (const [method, p, body, headers] of bad) {
      const r = await raw(method, p, body, headers);
      expect([method, p, body, r.status >= 400 && r.status < 500]).toEqual([method, p, body, true]);
    }
    expect((await h.store.get<KubeObject & { data: object }>(ConfigMapType, 'keep', 'victim')).data).toEqual({
      a: '1',
    });
  });

  it('answers a very deeply nested body with 400, not 500', async () => {
    const d = 100_000;
    const deep = `{"metadata":{"name":"deep"},"data":${'['.repeat(d)}${']'.repeat(d)}}`;
    const r = await raw('POST', cmPath, deep, json);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).message).toMatch(/nested more than 512 levels/);
    const p = await raw('PATCH', `${cmPath}/keep`, `{"data":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, {
      'content-type': 'application/merge-patch+json',
    });
    expect(p.status).toBe(400);
    const y = await raw(
      'PATCH',
      `${cmPath}/keep?fieldManager=t`,
      `data: ${'['.repeat(5000)}${']'.repeat(5000)}`,
      {
        'content-type': 'application/apply-patch+yaml',
      },
    );
    expect(y.status).toBe(400);
  });

  it('refuses a non-integer limit or timeoutSeconds', async () => {
    for (const q of ['limit=abc', 'limit=-1', 'watch=1&timeoutSeconds=1e3', 'watch=1&timeoutSeconds=-5']) {
      const r = await raw('GET', `${cmPath}?${q}`);
      expect([q, r.status]).toEqual([q, 400]);
    }
  });

  it('keeps a watch open whose timeoutSeconds is beyond the timer range (2^31-1 ms)', async () => {
    const events: string[] = [];
    let res!: http.IncomingMessage;
    await new Promise<void>((resolve, reject) => {
      const req = http.request(
        { socketPath: h.server.socketPath, path: `${cmPath}?watch=1&timeoutSeconds=3000000` },
        (r) => {
          res = r;
          r.setEncoding('utf8');
          r.on('data', (d: string) => {
            events.push(...d.split('\n').filter(Boolean));
            if (events.some((e) => e.includes('"later"'))) resolve();
          });
          r.on('end', () => reject(new Error('the watch ended')));
          h.store
            .create(ConfigMapType, { metadata: { name: 'later', namespace: 'victim' } } as never)
            .catch(reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    res.destroy();
    expect(events.map((e) => JSON.parse(e).object.metadata.name)).toContain('later');
  });
});
