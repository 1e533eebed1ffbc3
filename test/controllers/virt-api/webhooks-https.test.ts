/**
 * virt-api's webhooks over real HTTPS, as the API server calls them: AdmissionReviews in,
 * AdmissionReviews out (defaults as a JSONPatch that applies, refusals with field-path
 * causes), and 400 for what is not a readable AdmissionReview.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { kinds } from '../../../src/api/groups';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import type { JsonPatchOperation } from '../../../src/controllers/virt-api/json-patch';
import { startVirtApi, type VirtApi } from '../../../src/controllers/virt-api/server';
import { issue, makeCa } from '../../support/tls-certs';

const dir = mkdtempSync(join(tmpdir(), 'kvts-virtapi-'));
let api: VirtApi;
let ca: Buffer;

function post(path: string, body: string | Buffer, contentType = 'application/json') {
  return new Promise<{
    status: number;
    body: Record<string, unknown> & { response?: Record<string, unknown> };
  }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: api.port,
        path,
        method: 'POST',
        ca,
        headers: { 'content-type': contentType },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function review(
  kind: string,
  object: unknown,
  operation = 'CREATE',
  oldObject?: unknown,
  username = 'alice',
) {
  // The webhooks check that kind, group and resource agree, as the API server sends them.
  const info = kinds.find((k) => k.kind === kind);
  const group = info?.group ?? 'kubevirt.io';
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'u-1',
      kind: { group, version: 'v1', kind },
      resource: { group, version: 'v1', resource: info?.plural ?? `${kind.toLowerCase()}s` },
      operation,
      userInfo: { username },
      object,
      oldObject,
    },
  });
}

/** Applies add/replace/remove operations (what the API server does with the patch). */
function applyPatch(doc: unknown, ops: JsonPatchOperation[]): unknown {
  const out = structuredClone(doc) as Record<string, unknown>;
  for (const op of ops) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = parts.pop() as string;
    let at = out as Record<string, unknown>;
    for (const p of parts) at = at[p] as Record<string, unknown>;
    if (op.op === 'remove') delete at[last];
    else at[last] = op.value;
  }
  return out;
}

const vm = (extra: Record<string, unknown> = {}) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'vm1', namespace: 'default' },
  spec: {
    runStrategy: 'Halted',
    template: {
      spec: {
        domain: {
          devices: { disks: [{ name: 'root', disk: {} }] },
          resources: { requests: { memory: '64Mi' } },
        },
        volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
        ...extra,
      },
    },
  },
});

beforeAll(async () => {
  const caFiles = makeCa(dir, 'ca');
  const serving = issue(dir, caFiles, 'serving', 'virt-api', ['IP:127.0.0.1', 'DNS:virt-api.kubevirt.svc']);
  const client = issue(dir, caFiles, 'client', 'kubevirt.io:system:client:virt-handler');
  ca = readFileSync(caFiles.cert);
  const noApi = {
    get: async () => {
      throw new Error('no API server in this test');
    },
  } as unknown as ObjectClient;
  api = await startVirtApi({
    client: noApi,
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    handler: { tls: { ...client, ca: caFiles.cert } },
    requestHeader: {
      clientCA: ca.toString(),
      allowedNames: [],
      usernameHeaders: [],
      groupHeaders: [],
      extraHeaderPrefixes: [],
    },
  });
});
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('virt-api admission webhooks over HTTPS', () => {
  it('the VM mutator answers the defaults as a JSONPatch that applies to the object', async () => {
    const object = vm();
    const res = await post('/virtualmachines-mutate', review('VirtualMachine', object));
    expect(res.status).toBe(200);
    expect(res.body.response?.uid).toBe('u-1');
    expect(res.body.response?.allowed).toBe(true);
    expect(res.body.response?.patchType).toBe('JSONPatch');
    const ops = JSON.parse(
      Buffer.from(res.body.response?.patch as string, 'base64').toString(),
    ) as JsonPatchOperation[];
    const patched = applyPatch(object, ops) as ReturnType<typeof vm> & {
      spec: { template: { spec: { domain: { machine?: { type?: string } } } } };
    };
    expect(patched.spec.template.spec.domain.machine?.type).toBe('q35');
  });

  it('the VM validator refuses with upstream causes naming each field path', async () => {
    const bad = vm();
    bad.spec.template.spec.domain.devices.disks.push({ name: 'root', disk: {} });
    const res = await post('/virtualmachines-validate', review('VirtualMachine', bad));
    expect(res.status).toBe(200);
    const r = res.body.response as {
      allowed: boolean;
      status: {
        code: number;
        reason: string;
        message: string;
        details: { causes: Array<{ field: string; reason: string }> };
      };
    };
    expect(r.allowed).toBe(false);
    expect(r.status.code).toBe(422);
    expect(r.status.reason).toBe('Invalid');
    const fields = r.status.details.causes.map((c) => c.field);
    expect(fields).toContain('spec.template.spec.domain.devices.disks[1].name');
    expect(r.status.message).toContain('spec.template.spec.domain.devices.disks[1].name: ');
  });

  /** The VMI update webhook's answer to `next` replacing `old`, from `user` (alice by default). */
  const vmiUpdate = async (next: object, old: object, user?: string) =>
    (
      await post(
        '/virtualmachineinstances-validate-update',
        review('VirtualMachineInstance', next, 'UPDATE', old, user),
      )
    ).body.response as {
      allowed: boolean;
      status?: { details: { causes: Array<{ field: string; message: string }> } };
    };
  // The controller's: the handler's account is also node-restricted (node-restriction.test.ts).
  const CONTROLLER = 'system:serviceaccount:kubevirt:kubevirt-controller';
  const someVmi = () => ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'a', namespace: 'default' } as { name: string; namespace: string; labels?: object },
    spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
    status: {
      nodeName: 'node-a',
      migrationState: { targetNode: 'node-b', migrationConfiguration: { disableTLS: false } },
    },
  });

  it('a VMI spec update by a user is refused; the same update by a KubeVirt service account is not', async () => {
    const vmi = someVmi();
    const changed = someVmi();
    changed.spec.domain.resources.requests.memory = '128Mi';
    const r = await vmiUpdate(changed, vmi);
    expect(r.allowed).toBe(false);
    expect(r.status?.details.causes).toEqual([
      { reason: 'FieldValueForbidden', field: 'spec', message: 'update of VMI object is restricted' },
    ]);
    expect((await vmiUpdate(changed, vmi, CONTROLLER)).allowed).toBe(true);
  });

  it("a user may not rewrite a VMI's migration state (the handlers act on it); its labels still change", async () => {
    const vmi = someVmi();
    const plain = someVmi();
    plain.status.migrationState.migrationConfiguration.disableTLS = true;
    const r = await vmiUpdate(plain, vmi);
    expect(r.allowed).toBe(false);
    expect(r.status?.details.causes).toEqual([
      {
        reason: 'FieldValueForbidden',
        field: 'status.migrationState',
        message: "only KubeVirt's components may change a VMI's migration state",
      },
    ]);
    const labelled = someVmi();
    labelled.metadata.labels = { team: 'a' };
    expect((await vmiUpdate(labelled, vmi)).allowed).toBe(true);
    expect((await vmiUpdate(plain, vmi, CONTROLLER)).allowed).toBe(true);
  });

  it('malformed, wrong-kind and oversized AdmissionReviews get a 400 naming the problem, never an admit', async () => {
    const notJson = await post('/virtualmachines-validate', '{"apiVersion":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.message).toMatch(/AdmissionReview is not JSON/);
    const noUid = await post(
      '/virtualmachines-validate',
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { operation: 'CREATE' },
      }),
    );
    expect(noUid.status).toBe(400);
    expect(noUid.body.message).toBe('request.uid: required');
    const v1beta1 = await post(
      '/virtualmachines-validate',
      review('VirtualMachine', vm()).replace('admission.k8s.io/v1', 'admission.k8s.io/v1beta1'),
    );
    expect(v1beta1.status).toBe(400);
    expect(v1beta1.body.message).toMatch(/expected admission.k8s.io\/v1 AdmissionReview/);
    const huge = await post('/virtualmachines-validate', Buffer.alloc(9 * 1024 * 1024, 0x20));
    expect(huge.status).toBe(413);
    expect(huge.body.message).toMatch(/AdmissionReview of 9437184 bytes exceeds the 8388608-byte limit/);
    const text = await post('/virtualmachines-validate', review('VirtualMachine', vm()), 'text/plain');
    expect(text.status).toBe(400);
    expect(text.body.message).toMatch(/expected application\/json/);
    const wrongKind = await post('/virtualmachines-validate', review('VirtualMachineInstance', vm()));
    expect(wrongKind.body.response?.allowed).toBe(false);
  });

  it('MigrationPolicy and Migration update rules', async () => {
    const pol = await post(
      '/migration-policy-validate',
      review('MigrationPolicy', {
        metadata: { name: 'p' },
        spec: { completionTimeoutPerGiB: -1, bandwidthPerMigration: '-5Mi' },
      }),
    );
    const causes = (pol.body.response as { status: { details: { causes: Array<{ field: string }> } } }).status
      .details.causes;
    expect(causes.map((c) => c.field)).toEqual([
      'spec.bandwidthPerMigration',
      'spec.completionTimeoutPerGiB',
    ]);
    const m = { metadata: { name: 'm', namespace: 'default' }, spec: { vmiName: 'a' } };
    const mu = await post(
      '/migration-validate-update',
      review('VirtualMachineInstanceMigration', { ...m, spec: { vmiName: 'b' } }, 'UPDATE', m),
    );
    expect(mu.body.response?.allowed).toBe(false);
  });

  it('discovery lists the subresources; namespaced calls need the front proxy certificate', async () => {
    const get = (path: string) =>
      new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
        request({ host: '127.0.0.1', port: api.port, path, ca }, (res) => {
          let t = '';
          res.on('data', (c: Buffer) => {
            t += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(t) }));
        })
          .on('error', reject)
          .end();
      });
    const list = await get('/apis/subresources.kubevirt.io/v1');
    expect(list.status).toBe(200);
    const names = (list.body.resources as Array<{ name: string }>).map((r) => r.name);
    expect(names).toContain('virtualmachineinstances/console');
    expect(names).toContain('virtualmachines/start');
    const pause = await get(
      '/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/a/guestosinfo',
    );
    expect(pause.status).toBe(401);
    expect(pause.body.message).toMatch(/no valid front-proxy client certificate/);
  });
});
