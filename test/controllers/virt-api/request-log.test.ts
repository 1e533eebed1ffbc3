/**
 * virt-api's object lines (upstream's log.Log.Object): each subresource call and each
 * admission refusal is one JSON line (the real pino logger of the virt-api command)
 * naming the object with `kind`, `namespace`, `name` and `uid`, over real HTTPS with the
 * front proxy's client certificate, as the aggregator calls it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { ComponentLog } from '../../../src/controllers/logging/component-log';
import type { ObjectClient, ResourceType } from '../../../src/controllers/runtime/types';
import { startVirtApi, type VirtApi } from '../../../src/controllers/virt-api/server';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';
import { waitFor } from '../../support/wait';

const dir = mkdtempSync(join(tmpdir(), 'kvts-virtapi-log-'));
let api: VirtApi;
let ca: Buffer;
let proxy: CertFiles;
const lines: Record<string, unknown>[] = [];

/** VMIs the fake API server holds, by name. */
const vmis: Record<string, Record<string, unknown>> = {
  scheduled: {
    metadata: { name: 'scheduled', namespace: 'ns1', uid: '11111111-aaaa-4000-8000-000000000001' },
    status: { phase: 'Scheduled' },
  },
  running: {
    metadata: { name: 'running', namespace: 'ns1', uid: '11111111-aaaa-4000-8000-000000000002' },
    status: { phase: 'Running', nodeName: 'node1' },
  },
};

function call(method: string, path: string, body?: unknown) {
  return new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: api.port,
        path,
        method,
        ca,
        cert: readFileSync(proxy.cert),
        key: readFileSync(proxy.key),
        headers: { 'content-type': 'application/json', 'x-remote-user': 'alice' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The line whose msg matches, once pino wrote it (the call's line follows its answer). */
const lineFor = (msg: RegExp) =>
  waitFor(`a line matching ${msg}`, () => lines.find((l) => msg.test(String(l.msg))), 10_000, 20);

beforeAll(async () => {
  const caFiles = makeCa(dir, 'ca');
  const serving = issue(dir, caFiles, 'serving', 'virt-api', ['IP:127.0.0.1']);
  const client = issue(dir, caFiles, 'client', 'kubevirt.io:system:client:virt-handler');
  proxy = issue(dir, caFiles, 'proxy', 'front-proxy-client');
  ca = readFileSync(caFiles.cert);
  const fake = {
    get: async (type: ResourceType, name: string) => {
      const v = type.kind === 'VirtualMachineInstance' ? vmis[name] : undefined;
      if (!v) throw new Error(`${type.kind} ${name} not found`);
      return structuredClone(v);
    },
  } as unknown as ObjectClient;
  const logs = new ComponentLog(
    'virt-api',
    2,
    new Writable({
      write(chunk, _e, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    }),
  );
  api = await startVirtApi({
    client: fake,
    // Authorization is path-authz.test.ts's subject: here every call is allowed.
    authorizer: async () => ({ allowed: true }),
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    handler: { tls: { ...client, ca: caFiles.cert } },
    requestHeader: {
      clientCA: ca.toString(),
      allowedNames: ['front-proxy-client'],
      usernameHeaders: ['X-Remote-User'],
      groupHeaders: [],
      extraHeaderPrefixes: [],
    },
    objectLog: logs.logger,
  });
});
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

const vmiPath = (name: string, op: string) =>
  `/apis/subresources.kubevirt.io/v1/namespaces/ns1/virtualmachineinstances/${name}/${op}`;

describe("virt-api's object lines", () => {
  it("a subresource call that succeeds: info, with the VMI's namespace, name and uid", async () => {
    expect(await call('PUT', vmiPath('running', 'pause'), { dryRun: ['All'] })).toBe(200);
    const l = await lineFor(/^subresource pause on VirtualMachineInstance ns1\/running$/);
    expect(l).toMatchObject({
      component: 'virt-api',
      level: 'info',
      kind: 'VirtualMachineInstance',
      namespace: 'ns1',
      name: 'running',
      uid: '11111111-aaaa-4000-8000-000000000002',
      subresource: 'pause',
      method: 'PUT',
    });
    expect(typeof l.time).toBe('string');
  });

  it('a refused call: warn, with the code and reason', async () => {
    expect(await call('PUT', vmiPath('scheduled', 'pause'), {})).toBe(409);
    const l = await lineFor(/^subresource pause on VirtualMachineInstance ns1\/scheduled failed$/);
    expect(l).toMatchObject({
      level: 'warn',
      kind: 'VirtualMachineInstance',
      namespace: 'ns1',
      name: 'scheduled',
      uid: '11111111-aaaa-4000-8000-000000000001',
      code: 409,
      reason:
        'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "scheduled": VM is not running',
    });
  });

  it('a call on a VMI that does not exist: its namespace and name, no uid', async () => {
    expect(await call('PUT', vmiPath('gone', 'unpause'), {})).toBe(404);
    const l = await lineFor(/^subresource unpause on VirtualMachineInstance ns1\/gone failed$/);
    expect(l).toMatchObject({ level: 'warn', namespace: 'ns1', name: 'gone', code: 404 });
    expect(l).not.toHaveProperty('uid');
  });

  it('an admission refusal: the object refused, the webhook, each cause with its field path', async () => {
    const vmi = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      // The API server sets the uid before it calls the webhooks, on a CREATE too.
      metadata: { name: 'bad', namespace: 'ns1', uid: '11111111-aaaa-4000-8000-000000000009' },
      spec: {
        domain: {
          devices: {
            disks: [
              { name: 'root', disk: {} },
              { name: 'root', disk: {} },
            ],
          },
          resources: { requests: { memory: '64Mi' } },
        },
        volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
      },
    };
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'review-1',
        kind: { group: 'kubevirt.io', version: 'v1', kind: 'VirtualMachineInstance' },
        resource: { group: 'kubevirt.io', version: 'v1', resource: 'virtualmachineinstances' },
        name: 'bad',
        namespace: 'ns1',
        operation: 'CREATE',
        userInfo: { username: 'alice' },
        object: vmi,
      },
    };
    expect(await call('POST', '/virtualmachineinstances-validate-create', review)).toBe(200);
    const l = await lineFor(/^admission refused CREATE of VirtualMachineInstance ns1\/bad$/);
    expect(l).toMatchObject({
      level: 'info',
      kind: 'VirtualMachineInstance',
      namespace: 'ns1',
      name: 'bad',
      operation: 'CREATE',
      webhook: '/virtualmachineinstances-validate-create',
    });
    expect(l.uid).toBe('11111111-aaaa-4000-8000-000000000009');
    expect(l.causes).toEqual(
      expect.arrayContaining([expect.stringMatching(/^spec\.domain\.devices\.disks\[1\]\.name: /)]),
    );
  });
});
