/**
 * Upstream's node restriction through a real kube-apiserver (issue 24): tokens of
 * virt-handler's service account bound to a handler pod on node-a and on node-b (what the
 * kubelet projects into a handler pod; the API server adds the pod's node to the user's
 * extra authentication.kubernetes.io/node-name). The RBAC role lets the account update
 * every VMI; virt-api's VMI update webhook lets each token change only the VMIs of its
 * node: node-b's patch and update of a VMI on node-a are refused, node-a's pass.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VirtualMachineInstanceType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { integration } from '../support/integration';
import { available as kubeAvailable, unavailableReason as kubeUnavailableReason } from '../support/kube';
import { type BareVirtApi, bareVmi, startBareVirtApi } from './virt-api-bare';

type Obj = KubeObject & { status?: Record<string, unknown> };
const HANDLER_SA = 'kubevirt-handler';
const VMI_PATH = '/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/on-a';

const run = integration('node restriction through the API server', kubeAvailable(), kubeUnavailableReason);

describe.runIf(run)('node restriction through the API server', () => {
  let b: BareVirtApi;
  const tokens: Record<string, string> = {};

  /** A request to the API server with a bearer token. */
  const call = (token: string, method: string, path: string, body: unknown, contentType: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(b.cp.server);
      const payload = JSON.stringify(body);
      const req = https.request(
        {
          host: url.hostname,
          port: url.port,
          path,
          method,
          ca: readFileSync(b.cp.tls.ca),
          agent: false,
          headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  const patch = (node: string, phase: string) =>
    call(tokens[node]!, 'PATCH', VMI_PATH, { status: { phase } }, 'application/merge-patch+json');

  beforeAll(async () => {
    b = await startBareVirtApi();
    const pod = (node: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `virt-handler-${node}`, namespace: 'kubevirt' },
      spec: {
        nodeName: node,
        serviceAccountName: HANDLER_SA,
        automountServiceAccountToken: false,
        containers: [{ name: 'virt-handler', image: 'kubevirt-ts:dev' }],
      },
    });
    const applied = await b.apply([
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: HANDLER_SA, namespace: 'kubevirt' } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'test-handler' },
        rules: [
          {
            apiGroups: ['kubevirt.io'],
            resources: ['virtualmachineinstances'],
            verbs: ['get', 'list', 'watch', 'update', 'patch'],
          },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'test-handler' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'test-handler' },
        subjects: [{ kind: 'ServiceAccount', name: HANDLER_SA, namespace: 'kubevirt' }],
      },
      ...['node-a', 'node-b'].map((n) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } })),
      pod('node-a'),
      pod('node-b'),
    ]);
    expect(applied.status, applied.stderr).toBe(0);
    for (const node of ['node-a', 'node-b']) {
      const t = await b.k([
        'create',
        'token',
        HANDLER_SA,
        '-n',
        'kubevirt',
        '--bound-object-kind',
        'Pod',
        '--bound-object-name',
        `virt-handler-${node}`,
      ]);
      expect(t.status, t.stderr).toBe(0);
      tokens[node] = t.stdout.trim();
    }
    const vmi = await b.client.create<Obj>(VirtualMachineInstanceType, bareVmi('default', 'on-a') as Obj);
    vmi.status = { phase: 'Scheduled', nodeName: 'node-a' };
    await b.client.update(VirtualMachineInstanceType, vmi);
  }, 300_000);

  afterAll(async () => {
    await b?.close();
  }, 120_000);

  it("the API server puts the bound pod's node in the token's user extra", async () => {
    const who = await call(
      tokens['node-b']!,
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      'application/json',
    );
    expect(who.status, who.body).toBe(201);
    const info = JSON.parse(who.body) as {
      status: { userInfo: { username: string; extra?: Record<string, string[]> } };
    };
    expect(info.status.userInfo.username).toBe(`system:serviceaccount:kubevirt:${HANDLER_SA}`);
    expect(info.status.userInfo.extra?.['authentication.kubernetes.io/node-name']).toEqual(['node-b']);
  });

  it("node-b's handler cannot patch or update a VMI on node-a", async () => {
    const p = await patch('node-b', 'Failed');
    expect(p.status, p.body).toBe(422);
    expect(JSON.parse(p.body).message).toContain(
      'status.nodeName: Node restriction, virt-handler is only allowed to modify VMIs it owns (VMI on node "node-a", handler of node "node-b")',
    );
    const current = await b.client.get<Obj>(VirtualMachineInstanceType, 'on-a', 'default');
    const u = await call(
      tokens['node-b']!,
      'PUT',
      VMI_PATH,
      { ...current, status: { ...current.status, phase: 'Failed' } },
      'application/json',
    );
    expect(u.status, u.body).toBe(422);
    const after = await b.client.get<Obj>(VirtualMachineInstanceType, 'on-a', 'default');
    expect(after.status?.phase).toBe('Scheduled');
    expect(after.metadata?.resourceVersion).toBe(current.metadata?.resourceVersion);
  });

  it("node-a's handler can patch and update it", async () => {
    const p = await patch('node-a', 'Running');
    expect(p.status, p.body).toBe(200);
    const current = await b.client.get<Obj>(VirtualMachineInstanceType, 'on-a', 'default');
    expect(current.status?.phase).toBe('Running');
    const u = await call(
      tokens['node-a']!,
      'PUT',
      VMI_PATH,
      { ...current, metadata: { ...current.metadata, labels: { 'kubevirt.io/nodeName': 'node-a' } } },
      'application/json',
    );
    expect(u.status, u.body).toBe(200);
  });

  it('node-b may not name itself migration target of the VMI either', async () => {
    const p = await call(
      tokens['node-b']!,
      'PATCH',
      VMI_PATH,
      { status: { migrationState: { targetNode: 'node-b' } } },
      'application/merge-patch+json',
    );
    expect(p.status, p.body).toBe(422);
  });
});
