/**
 * virt-api's webhooks under hostile AdmissionReviews, over real HTTPS: a flood of big
 * reviews is bounded by a byte budget (refused with 429, oversize with 413) while a small
 * review is still answered quickly; an own `"__proto__"` key does not hide a spec change;
 * the object is validated as the kind the request names; and JSON nested past the depth
 * limit gets an AdmissionReview refusal naming the limit, not a 500.
 */
import http2 from 'node:http2';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_OBJECT_DEPTH } from '../../../src/api/json-bounds';
import { MAX_REVIEW_BYTES } from '../../../src/controllers/virt-api/admission-review';
import type { VirtApi } from '../../../src/controllers/virt-api/server';
import { startVirtApiFixture, type VirtApiFixture } from './virt-api-fixture';

let fixture: VirtApiFixture;
let api: VirtApi;
let ca: Buffer;

interface Answer {
  status: number;
  body: Record<string, unknown> & {
    response?: {
      allowed?: boolean;
      status?: { message: string; details?: { causes: { field: string; message: string }[] } };
    };
  };
  ms: number;
}

function post(path: string, body: string | Buffer): Promise<Answer> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: api.port,
        path,
        method: 'POST',
        ca,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(chunks).toString()),
            ms: performance.now() - start,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** An AdmissionReview as text (objects given as JSON text keep an own `__proto__` key). */
function review(o: {
  kind: string;
  resource?: string;
  object: string;
  oldObject?: string;
  operation?: string;
}): string {
  const resource = o.resource ?? `${o.kind.toLowerCase()}s`;
  return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"kubevirt.io","version":"v1","kind":"${o.kind}"},"resource":{"group":"kubevirt.io","version":"v1","resource":"${resource}"},"operation":"${o.operation ?? 'CREATE'}","userInfo":{"username":"alice"},"object":${o.object}${o.oldObject ? `,"oldObject":${o.oldObject}` : ''}}}`;
}

const vmiJson = (spec: string) =>
  `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"a","namespace":"default"},"spec":${spec}}`;
const DOMAIN = '{"devices":{},"resources":{"requests":{"memory":"64Mi"}}}';

beforeAll(async () => {
  fixture = await startVirtApiFixture('kvts-virtapi-hostile-');
  ({ api, ca } = fixture);
});
afterAll(async () => {
  await fixture?.close();
});

describe('virt-api webhooks under hostile AdmissionReviews', () => {
  it('a flood of big reviews is bounded: a small review is answered fast, the excess gets 429', async () => {
    // About 5.5 MB each: 170,000 annotations (many small values: what costs heap once parsed).
    const annotations = Array.from({ length: 170_000 }, (_, i) => `"a${i}.example.com/k":"v${i}"`).join(',');
    const big = Buffer.from(
      review({
        kind: 'VirtualMachineInstance',
        object: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"a","namespace":"default","annotations":{${annotations}}},"spec":{"domain":${DOMAIN}}}`,
      }),
    );
    expect(big.length).toBeGreaterThan(5_000_000);
    expect(big.length).toBeLessThan(MAX_REVIEW_BYTES);
    const used = () => {
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const heap = used();
    let peak = heap;
    const sampler = setInterval(() => {
      peak = Math.max(peak, used());
    }, 10);
    const flood = Array.from({ length: 30 }, () => post('/virtualmachineinstances-validate-create', big));
    await new Promise((r) => setTimeout(r, 200));
    const small = await post(
      '/virtualmachineinstances-validate-create',
      review({ kind: 'VirtualMachineInstance', object: vmiJson(`{"domain":${DOMAIN}}`) }),
    );
    const answers = await Promise.all(flood);
    clearInterval(sampler);
    expect(small.status).toBe(200);
    expect(small.body.response?.allowed).toBe(true);
    expect(small.ms).toBeLessThan(5000);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0].body.message).toMatch(
      /^AdmissionReview of \d+ bytes refused: .* MiB of request bodies are being admitted, the budget is 16\.0 MiB; retry later$/,
    );
    // Those admitted were answered as usual.
    for (const a of answers.filter((x) => x.status !== 429)) expect(a.status).toBe(200);
    // The budget (24 MiB of bodies) bounds the heap: twelve reviews at once would be far more.
    expect(peak - heap).toBeLessThan(400 * 1024 * 1024);
  }, 60_000);

  it('a review over the size limit is refused with 413 before it is read', async () => {
    const res = await post('/virtualmachines-validate', Buffer.alloc(MAX_REVIEW_BYTES + 1, 0x20));
    expect(res.status).toBe(413);
    expect(res.body.message).toBe(
      `AdmissionReview of ${MAX_REVIEW_BYTES + 1} bytes exceeds the ${MAX_REVIEW_BYTES}-byte limit`,
    );
  });

  it('over HTTP/2 (what the API server speaks) a refused body leaves the session usable', async () => {
    const session = http2.connect(`https://127.0.0.1:${api.port}`, { ca });
    const send = (body: Buffer | string) =>
      new Promise<{ status: number; body: Answer['body'] }>((resolve, reject) => {
        const req = session.request({
          ':method': 'POST',
          ':path': '/virtualmachineinstances-validate-create',
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        });
        let status = 0;
        const chunks: Buffer[] = [];
        req.on('response', (h) => {
          status = Number(h[':status']);
        });
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => resolve({ status, body: JSON.parse(Buffer.concat(chunks).toString()) }));
        req.on('error', reject);
        req.end(body);
      });
    try {
      const huge = await send(Buffer.alloc(MAX_REVIEW_BYTES + 1, 0x20));
      expect(huge.status).toBe(413);
      const ok = await send(
        review({ kind: 'VirtualMachineInstance', object: vmiJson(`{"domain":${DOMAIN}}`) }),
      );
      expect(ok.status).toBe(200);
      expect(ok.body.response?.allowed).toBe(true);
    } finally {
      session.close();
    }
  });

  it('an own "__proto__" key in the new spec does not hide a VMI spec change', async () => {
    const old = vmiJson(`{"domain":${DOMAIN},"terminationGracePeriodSeconds":5}`);
    const changed = vmiJson(`{"domain":${DOMAIN},"__proto__":{}}`);
    const res = await post(
      '/virtualmachineinstances-validate-update',
      review({ kind: 'VirtualMachineInstance', object: changed, oldObject: old, operation: 'UPDATE' }),
    );
    expect(res.body.response?.allowed).toBe(false);
    expect(res.body.response?.status?.message).toBe('spec: update of VMI object is restricted');
    // ... nor a migration's.
    const m = (spec: string) =>
      `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m","namespace":"default"},"spec":${spec}}`;
    const mig = await post(
      '/migration-validate-update',
      review({
        kind: 'VirtualMachineInstanceMigration',
        object: m('{"__proto__":{}}'),
        oldObject: m('{"vmiName":"a"}'),
        operation: 'UPDATE',
      }),
    );
    expect(mig.body.response?.allowed).toBe(false);
    expect(mig.body.response?.status?.message).toBe("spec: update of Migration object's spec is restricted");
  });

  it('validates the object as request.kind says; a different object.kind or resource is refused', async () => {
    // A VMI with two disks of one name, sent as a KubeVirt object inside a VMI request.
    const badSpec = `{"domain":{"devices":{"disks":[{"name":"d","disk":{}},{"name":"d","disk":{}}]},"resources":{"requests":{"memory":"64Mi"}}}}`;
    const disguised = vmiJson(badSpec).replace('"kind":"VirtualMachineInstance"', '"kind":"KubeVirt"');
    const res = await post(
      '/virtualmachineinstances-validate-create',
      review({ kind: 'VirtualMachineInstance', object: disguised }),
    );
    expect(res.body.response?.allowed).toBe(false);
    expect(res.body.response?.status?.message).toBe(
      'kind: the object\'s kind "KubeVirt" is not the request\'s kind "VirtualMachineInstance"',
    );
    const wrongResource = await post(
      '/virtualmachineinstances-validate-create',
      review({
        kind: 'VirtualMachineInstance',
        resource: 'kubevirts',
        object: vmiJson(`{"domain":${DOMAIN}}`),
      }),
    );
    expect(wrongResource.body.response?.allowed).toBe(false);
    expect(wrongResource.body.response?.status?.message).toBe(
      'resource: expected kubevirt.io virtualmachineinstances for kind VirtualMachineInstance, got kubevirt.io kubevirts',
    );
  });

  it('JSON nested 10,000 levels deep gets an AdmissionReview refusal naming the limit', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const path of ['/virtualmachineinstances-validate-create', '/virtualmachineinstances-mutate']) {
      const res = await post(
        path,
        review({ kind: 'VirtualMachineInstance', object: vmiJson(`{"domain":${DOMAIN},"x":${deep}}`) }),
      );
      expect(res.status).toBe(200);
      expect(res.body.response?.allowed).toBe(false);
      expect(res.body.response?.status?.message).toBe(
        `request: the AdmissionReview is nested more than ${MAX_OBJECT_DEPTH} levels deep`,
      );
    }
  });
});
