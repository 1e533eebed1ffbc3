/**
 * Through a real kube-apiserver (issue 24): user alice, whose only role is
 * kubevirt.io:edit in namespace alice, sends every VMI and VM subresource on paths that
 * walk from her VMI into namespace victim (`..`, `%2e%2e`, `.%2E`, separated by `/`,
 * `%2f`, `\` or `%5c`, after the namespace, the name or the subresource). Each is refused,
 * by the API server or by virt-api, and nothing reaches victim: the stand-in handler saw
 * no call for it, victim's VMI and VM are unchanged (still there, not paused, same
 * resourceVersion). Her own VMI still works through the same chain.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyUploadToken } from '../../src/controllers/common/upload-token';
import { VirtualMachineInstanceType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { aggregatedRoleObjects } from '../../src/controllers/virt-operator/components/cluster-roles';
import { httpsOutcome } from '../support/https-outcome';
import { integration } from '../support/integration';
import { available as kubeAvailable, unavailableReason as kubeUnavailableReason } from '../support/kube';
import { dotPath, SUBRESOURCE_CASES, type SubresourceCase, traversalPaths } from '../support/path-traversal';
import { type BareVirtApi, bareVmi, startBareVirtApi } from './virt-api-bare';

type Obj = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

const run = integration(
  'virt-api authorization through the API server',
  kubeAvailable(),
  kubeUnavailableReason,
);

describe.runIf(run)('virt-api authorization through the API server', () => {
  let b: BareVirtApi;
  let alice: { ca: Buffer; cert: Buffer; key: Buffer };
  const before: Record<string, string | undefined> = {};
  /** Outcomes by status and message, for the summary line. */
  const seen = new Map<string, number>();

  const send = (path: string, method: string, stream = false) => {
    const url = new URL(b.cp.server);
    return httpsOutcome({ host: url.hostname, port: url.port, path, method, ...alice, agent: false }, stream);
  };

  const victimState = async () => {
    const vmi = await b.client.get<Obj>(VirtualMachineInstanceType, 'v', 'victim');
    const vm = await b.client.get<Obj>(VirtualMachineType, 'v', 'victim');
    return { vmi: vmi.metadata?.resourceVersion, vm: vm.metadata?.resourceVersion };
  };

  beforeAll(async () => {
    b = await startBareVirtApi();
    const applied = await b.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'alice' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'victim' } },
      ...aggregatedRoleObjects(),
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'alice-edit', namespace: 'alice' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kubevirt.io:edit' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    ]);
    expect(applied.status, applied.stderr).toBe(0);
    const kubeconfig = readFileSync(b.cp.kubeconfigFor('alice'), 'utf8');
    const file = (field: string) =>
      readFileSync(JSON.parse(new RegExp(`${field}: (".*")`).exec(kubeconfig)![1]!));
    alice = { ca: file('certificate-authority'), cert: file('client-certificate'), key: file('client-key') };
    for (const [ns, name] of [
      ['alice', 'a'],
      ['victim', 'v'],
    ] as const) {
      const created = await b.client.create<Obj>(VirtualMachineInstanceType, bareVmi(ns, name) as Obj);
      created.status = {
        phase: 'Running',
        nodeName: 'node-1',
        interfaces: [{ name: 'default', ipAddress: '127.0.0.1' }],
      };
      await b.client.update(VirtualMachineInstanceType, created);
      const { metadata: _m, apiVersion: _a, kind: _k, ...template } = bareVmi(ns, name);
      await b.client.create<Obj>(VirtualMachineType, {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: { name, namespace: ns },
        spec: { runStrategy: 'Always', template },
      } as Obj);
    }
    Object.assign(before, await victimState());
  }, 300_000);

  afterAll(async () => {
    console.log(`outcomes of the walks: ${[...seen].map(([k, n]) => `${n}x ${k}`).join('; ')}`);
    await b?.close();
  }, 120_000);

  it('alice gets an upload token through the aggregator in her namespace (kubevirt.io:edit), not in victim', async () => {
    const file = join(b.cp.dir, 'utr.json');
    const utr = (ns: string) =>
      writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'upload.cdi.kubevirt.io/v1beta1',
          kind: 'UploadTokenRequest',
          metadata: { name: 'tok', namespace: ns },
          spec: { pvcName: 'disk' },
        }),
      );
    utr('alice');
    const asAlice = b.cp.kubeconfigFor('alice');
    const made = await b.k(['create', '--validate=false', '-f', file, '-o', 'json'], asAlice);
    expect(made.status, made.stderr).toBe(0);
    const answer = JSON.parse(made.stdout);
    expect(answer.metadata).toMatchObject({ name: 'tok', namespace: 'alice' });
    expect(verifyUploadToken(answer.status.token, b.signerCert)).toMatchObject({
      name: 'disk',
      namespace: 'alice',
    });
    utr('victim');
    const refused = await b.k(['create', '--validate=false', '-f', file, '-o', 'json'], asAlice);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/forbidden/i);
  });

  it("alice reaches her own VMI through the API server (the chain works), and not victim's directly", async () => {
    const own = await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/alice/virtualmachineinstances/a/pause',
      'PUT',
    );
    expect(own.status, own.body).toBe(200);
    expect(b.handlerCalls).toContain('PUT /v1/namespaces/alice/virtualmachineinstances/a/pause');
    const other = await send(
      '/apis/subresources.kubevirt.io/v1/namespaces/victim/virtualmachineinstances/v/pause',
      'PUT',
    );
    expect(other.status).toBe(403);
  });

  it.each(SUBRESOURCE_CASES.map((c) => [`${c.resource}/${c.sub}`, c] as [string, SubresourceCase]))(
    '%s: every walk from alice into victim is refused and reaches nothing there',
    async (_label, c) => {
      const reached: string[] = [];
      for (const p of [...traversalPaths('alice', 'a', 'victim', 'v', c), dotPath('alice', 'a', c)]) {
        const r = await send(p, c.method, c.stream);
        let message = '';
        try {
          message = String((JSON.parse(r.body) as { message?: string }).message ?? '').slice(0, 40);
        } catch {}
        const key = `${r.status} ${message.replace(/\(.*$/, '').trim()}`;
        seen.set(key, (seen.get(key) ?? 0) + 1);
        if (r.status < 400) reached.push(`${r.status} ${c.method} ${p}`);
      }
      expect(reached).toEqual([]);
      expect(b.handlerCalls.filter((h) => h.includes('victim'))).toEqual([]);
      expect(await victimState()).toEqual(before);
    },
    120_000,
  );

  it("victim's VMI still exists, running and not paused; its VM still Always", async () => {
    const vmi = await b.client.get<Obj>(VirtualMachineInstanceType, 'v', 'victim');
    expect(vmi.status?.phase).toBe('Running');
    expect(JSON.stringify(vmi.status?.conditions ?? [])).not.toContain('Paused');
    const vm = await b.client.get<Obj>(VirtualMachineType, 'v', 'victim');
    expect(vm.spec?.runStrategy).toBe('Always');
  });
});
