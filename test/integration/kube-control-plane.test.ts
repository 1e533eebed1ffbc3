/**
 * The real control plane the integration tests stand on: kube-apiserver answers with the
 * pinned version, RBAC is enforced, the controller manager's garbage collector deletes
 * dependents, the scheduler binds pods, and a restarted API server keeps its data.
 * This file owns its control plane (it restarts the API server), so the shared one stays
 * undisturbed.
 */
import { ApiException, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integration } from '../support/integration';
import {
  available,
  type ControlPlane,
  registerReadyNode,
  startControlPlane,
  unavailableReason,
} from '../support/kube';

const run = integration('Kubernetes control plane', available(), unavailableReason);

function coreFor(kubeconfigPath: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return kc.makeApiClient(CoreV1Api);
}

/** Polls `check` until it returns a value; the bound only keeps a broken test from hanging. */
async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not true after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function statusOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

describe.runIf(run)('Kubernetes control plane on loopback', () => {
  let cp: ControlPlane;
  let core: CoreV1Api;

  beforeAll(async () => {
    cp = await startControlPlane();
    core = coreFor(cp.kubeconfigPath);
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('answers with the pinned Kubernetes version and is ready', async () => {
    const version = await cp.get('/version');
    expect(version.status).toBe(200);
    expect(JSON.parse(version.body).gitVersion).toMatch(/^v1\.34\.\d+$/);
    const ready = await cp.get('/readyz');
    expect(ready).toEqual({ status: 200, body: 'ok' });
  });

  it('enforces RBAC: an unbound user is forbidden until a RoleBinding grants access', async () => {
    await core.createNamespace({ body: { metadata: { name: 'rbac-check' } } });
    const alice = coreFor(cp.kubeconfigFor('alice'));
    expect(await statusOf(alice.listNamespacedConfigMap({ namespace: 'rbac-check' }))).toBe(403);

    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace: 'rbac-check',
      body: {
        metadata: { name: 'alice-view' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
      },
    });
    // RBAC's authorizer reads bindings from an informer: the grant lands shortly after.
    await eventually('alice may list configmaps', async () =>
      (await statusOf(alice.listNamespacedConfigMap({ namespace: 'rbac-check' }))) === 200 ? true : undefined,
    );
    // `view` does not grant writes, and nothing outside the namespace.
    expect(
      await statusOf(
        alice.createNamespacedConfigMap({ namespace: 'rbac-check', body: { metadata: { name: 'x' } } }),
      ),
    ).toBe(403);
    expect(await statusOf(alice.listNamespacedConfigMap({ namespace: 'default' }))).toBe(403);
  });

  it('runs the garbage collector: deleting an owner deletes its dependents', async () => {
    const owner = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'gc-owner' } },
    });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: {
        metadata: {
          name: 'gc-dependent',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'gc-owner', uid: owner.metadata?.uid ?? '' },
          ],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'gc-owner' });
    const gone = await eventually('gc-dependent deleted', async () =>
      (await statusOf(core.readNamespacedConfigMap({ namespace: 'default', name: 'gc-dependent' }))) === 404
        ? true
        : undefined,
    );
    expect(gone).toBe(true);
  });

  it('runs the scheduler: a pod is bound to the one ready node', async () => {
    await registerReadyNode(cp.kubeconfigPath, 'node-a');
    const node = await core.readNode({ name: 'node-a' });
    expect(node.spec?.taints ?? []).toEqual([]);
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');

    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'scheduled' },
        spec: { containers: [{ name: 'c', image: 'registry.invalid/none:1' }] },
      },
    });
    const nodeName = await eventually('pod bound', async () => {
      const pod = await core.readNamespacedPod({ namespace: 'default', name: 'scheduled' });
      return pod.spec?.nodeName || undefined;
    });
    expect(nodeName).toBe('node-a');
  });

  it('restarts the API server on the same port with its data kept', async () => {
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'survives-restart' }, data: { k: 'v' } },
    });
    await cp.restartApiServer();
    expect((await cp.get('/readyz')).status).toBe(200);
    const cm = await core.readNamespacedConfigMap({ namespace: 'default', name: 'survives-restart' });
    expect(cm.data).toEqual({ k: 'v' });
  });
});
