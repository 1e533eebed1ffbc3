/**
 * virt-api acts only on what it authorised (issue 24): a subresource path that walks out of
 * its namespace with `..`, `%2e%2e`, an encoded slash or a backslash is refused with 400
 * before anything is read or forwarded, and the namespace and name it does act on are
 * checked by its authorizer (a SubjectAccessReview in a cluster; here one allowing only
 * namespace `alice`, as RBAC would for user alice). virt-api runs in this process with a
 * recording object client and a recording stand-in for the virt-handler.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import type { ResourceAttributes } from '../../../src/controllers/virt-api/authorizer';
import type { RemoteUser } from '../../../src/controllers/virt-api/front-proxy-auth';
import { HANDLER_SERVER_CN } from '../../../src/controllers/virt-api/handler-client';
import { startVirtApi, type VirtApi } from '../../../src/controllers/virt-api/server';
import { httpsOutcome, type Outcome } from '../../support/https-outcome';
import {
  dotPath,
  SUBRESOURCE_CASES,
  type SubresourceCase,
  traversalPaths,
} from '../../support/path-traversal';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';

const dir = mkdtempSync(join(tmpdir(), 'kvts-virtapi-authz-'));
let api: VirtApi;
let handler: https.Server;
let ca: Buffer;
let proxy: CertFiles;
/** Every object-client call (method, namespace, name) and every handler path reached. */
const touched: string[] = [];
const handlerPaths: string[] = [];
const authorized: ResourceAttributes[] = [];
const users: RemoteUser[] = [];
const agent = new https.Agent({ keepAlive: true, maxSockets: 8 });

const vmi = (ns: string, name: string) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name, namespace: ns, uid: `${ns}-${name}` },
  spec: { domain: { devices: { autoattachGraphicsDevice: true } } },
  status: { phase: 'Running', nodeName: 'node-1', interfaces: [{ name: 'default', ipAddress: '127.0.0.1' }] },
});
const vm = (ns: string, name: string) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name, namespace: ns, uid: `vm-${ns}-${name}` },
  spec: { runStrategy: 'Always', template: { spec: { domain: { devices: {} } } } },
  status: { created: true, ready: true },
});

/** An object client over the two namespaces' objects that records every call. */
function recordingClient(): ObjectClient {
  const objects = new Map<string, unknown>([
    ['VirtualMachineInstance/alice/a', vmi('alice', 'a')],
    ['VirtualMachineInstance/victim/v', vmi('victim', 'v')],
    ['VirtualMachine/alice/a', vm('alice', 'a')],
    ['VirtualMachine/victim/v', vm('victim', 'v')],
  ]);
  return new Proxy({} as ObjectClient, {
    get: (_t, method: string) => {
      if (method === 'then') return undefined;
      return async (type: { kind: string }, a: unknown, b: unknown) => {
        const obj = a as { metadata?: { name?: string; namespace?: string } };
        const [name, ns] =
          typeof a === 'string' ? [a, b as string] : [obj?.metadata?.name, obj?.metadata?.namespace];
        touched.push(`${method} ${type?.kind} ${ns}/${name}`);
        const found = objects.get(`${type?.kind}/${ns}/${name}`);
        if (method === 'get' && found) return structuredClone(found);
        if (method === 'list') return { items: [], metadata: {} };
        if (found) return structuredClone(found);
        throw Object.assign(new Error(`${type?.kind} ${ns}/${name} not found`), { code: 404 });
      };
    },
  });
}

/** One request as the API server's front proxy would send it, on the raw path given. */
function send(
  path: string,
  method: string,
  stream = false,
  extra: Record<string, string> = {},
): Promise<Outcome> {
  return httpsOutcome(
    {
      host: '127.0.0.1',
      port: api.port,
      path,
      method,
      ca,
      cert: readFileSync(proxy.cert),
      key: readFileSync(proxy.key),
      agent: stream ? false : agent,
      headers: { 'x-remote-user': 'alice', 'x-remote-group': 'system:authenticated', ...extra },
    },
    stream,
  );
}

const victimReached = () => [
  ...touched.filter((t) => t.includes('victim')),
  ...handlerPaths.filter((p) => p.includes('victim')),
];

beforeAll(async () => {
  const caFiles = makeCa(dir, 'ca');
  const frontProxyCa = makeCa(dir, 'front-proxy-ca');
  const serving = issue(dir, caFiles, 'serving', 'virt-api', ['IP:127.0.0.1']);
  const apiClient = issue(dir, caFiles, 'client', 'kubevirt.io:system:client:virt-handler');
  const handlerServing = issue(dir, caFiles, 'handler', HANDLER_SERVER_CN, ['IP:127.0.0.1']);
  proxy = issue(dir, frontProxyCa, 'front-proxy-client', 'front-proxy-client');
  ca = readFileSync(caFiles.cert);
  handler = https.createServer(
    { cert: readFileSync(handlerServing.cert), key: readFileSync(handlerServing.key) },
    (req, res) => {
      handlerPaths.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    },
  );
  handler.on('upgrade', (req, socket) => {
    handlerPaths.push(`UPGRADE ${req.url}`);
    socket.destroy();
  });
  await new Promise<void>((r) => handler.listen(0, '127.0.0.1', () => r()));
  api = await startVirtApi({
    client: recordingClient(),
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    handler: {
      tls: { ...apiClient, ca: caFiles.cert },
      port: (handler.address() as { port: number }).port,
      resolveHandler: async () => '127.0.0.1',
    },
    requestHeader: {
      clientCA: readFileSync(frontProxyCa.cert, 'utf8'),
      allowedNames: ['front-proxy-client'],
      usernameHeaders: ['X-Remote-User'],
      groupHeaders: ['X-Remote-Group'],
      extraHeaderPrefixes: ['X-Remote-Extra-'],
    },
    // RBAC of user alice: everything in namespace alice, nothing elsewhere.
    authorizer: async (user, attrs) => {
      authorized.push(attrs);
      users.push(user);
      return user.name === 'alice' && attrs.namespace === 'alice'
        ? { allowed: true }
        : { allowed: false, reason: 'alice has no role there' };
    },
  });
});
afterAll(async () => {
  agent.destroy();
  await api?.close();
  handler?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('virt-api routes on the raw path and authorises what it acts on', () => {
  it.each(SUBRESOURCE_CASES.map((c) => [`${c.resource}/${c.sub}`, c] as [string, SubresourceCase]))(
    '%s: every walk from alice to victim is a 400, and nothing of victim is read or forwarded',
    async (_label, c) => {
      const paths = [...traversalPaths('alice', 'a', 'victim', 'v', c), dotPath('alice', 'a', c)];
      const outcomes: string[] = [];
      for (const p of paths) {
        const r = await send(p, c.method, c.stream);
        if (r.status !== 400) outcomes.push(`${r.status} ${p}`);
      }
      expect(outcomes).toEqual([]);
      expect(victimReached()).toEqual([]);
    },
  );

  it('refuses walks on expand-vm-spec (a namespace-level call) with 400', async () => {
    for (const p of [
      '/apis/subresources.kubevirt.io/v1/namespaces/alice/../victim/expand-vm-spec',
      '/apis/subresources.kubevirt.io/v1/namespaces/alice%2f..%2fvictim/expand-vm-spec',
      '/apis/subresources.kubevirt.io/v1/namespaces/alice\\..\\victim/expand-vm-spec',
    ]) {
      expect((await send(p, 'PUT')).status, p).toBe(400);
    }
  });

  it('checks the namespace and name it acts on: a direct call into victim is a 403 naming them', async () => {
    authorized.length = 0;
    const r = await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/victim/virtualmachineinstances/v/pause',
      'PUT',
    );
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).message).toContain(
      'cannot update virtualmachineinstances/pause "v" in namespace "victim"',
    );
    expect(authorized).toEqual([
      {
        namespace: 'victim',
        verb: 'update',
        group: 'subresources.kubevirt.io',
        version: 'v1',
        resource: 'virtualmachineinstances',
        subresource: 'pause',
        name: 'v',
      },
    ]);
    const console = await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/victim/virtualmachineinstances/v/console',
      'GET',
      true,
    );
    expect(console.status).toBe(403);
    const stop = await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/victim/virtualmachines/v/stop',
      'PUT',
    );
    expect(stop.status).toBe(403);
    expect(victimReached()).toEqual([]);
  });

  it('checks portforward as "portforward", without its port (as upstream)', async () => {
    authorized.length = 0;
    await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/victim/virtualmachineinstances/v/portforward/22/tcp',
      'GET',
      true,
    );
    expect(authorized.map((a) => [a.subresource, a.verb])).toEqual([['portforward', 'get']]);
  });

  it("still serves alice's own VMI: pause reaches the handler for alice/a", async () => {
    const r = await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/alice/virtualmachineinstances/a/pause',
      'PUT',
    );
    expect(r.status, r.body).toBe(200);
    expect(handlerPaths).toContain('PUT /v1/namespaces/alice/virtualmachineinstances/a/pause');
  });

  it("passes the user's groups and extra attributes (keys unescaped) to the authorizer", async () => {
    users.length = 0;
    await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/alice/virtualmachineinstances/a/guestosinfo',
      'GET',
      false,
      {
        'X-Remote-Extra-Authentication.kubernetes.io%2fnode-name': 'node-1',
        'X-Remote-Extra-Scopes': 'a',
      },
    );
    expect(users).toHaveLength(1);
    expect(users[0]!.groups).toEqual(['system:authenticated']);
    expect({ ...users[0]!.extra }).toEqual({
      'authentication.kubernetes.io/node-name': ['node-1'],
      scopes: ['a'],
    });
  });
});
