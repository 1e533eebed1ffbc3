/**
 * virt-operator on a real kube-apiserver (no controller manager, so the test plays the
 * Deployment and DaemonSet controllers by writing their status): install from a KubeVirt
 * CR, status through Deploying to Deployed with `kubectl wait --for condition=Available`,
 * drift repair, certificate rotation with overlap (an injected clock), a second CR
 * refused, an image tag upgrade with virt-handler last, and removal.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdsDir } from '../../../scripts/gen-crds';
import { NotFoundError } from '../../../src/controllers/runtime/errors';
import { KubeClient } from '../../../src/controllers/runtime/kube/client';
import {
  CustomResourceDefinitionType,
  KubeVirtType,
  NamespaceType,
  SecretType,
  ServiceType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject, ResourceType } from '../../../src/controllers/runtime/types';
import { VERSION_ANNOTATION } from '../../../src/controllers/virt-operator/bookkeeping';
import { certInfo, signedBy, splitBundle } from '../../../src/controllers/virt-operator/certificates';
import type { VirtOperator } from '../../../src/controllers/virt-operator/operator';
import {
  APIServiceType,
  ClusterRoleType,
  DaemonSetType,
  DeploymentType,
  PodDisruptionBudgetType,
  ValidatingWebhookConfigurationType,
} from '../../../src/controllers/virt-operator/resource-types';
import { apiserverTestsEnabled, type ControlPlane, kubectlPath, startControlPlane } from '../../support/kube';
import { waitFor } from '../../support/wait';
import {
  apiServiceBundle,
  caBundle,
  crdEstablished,
  isNotFound,
  type KV,
  kubeVirtCr,
  markWorkloadsReady,
  runKubectlAsync,
  testOperator,
  tlsCert,
  versionOf,
} from './operator-apiserver-fixtures';

const run = apiserverTestsEnabled('kube-apiserver (virt-operator)');
const NS = 'kubevirt';

describe.skipIf(!run)('virt-operator on a real kube-apiserver', () => {
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let op: VirtOperator | undefined;
  let clock = Date.now();
  const errors: string[] = [];

  const kubectl = (...args: string[]) =>
    spawnSync(kubectlPath, ['--kubeconfig', cp!.kubeconfigPath, ...args], { encoding: 'utf8' });

  const newOperator = () => testOperator(client, NS, () => new Date(clock), errors);
  const startOperator = async () => {
    op = newOperator();
    await op.start();
  };

  // The operator runs in this process: a kubectl that waits must not block its event loop.
  const kubectlAsync = (...args: string[]) => runKubectlAsync(cp!.kubeconfigPath, ...args);

  const kv = () => client.get<KV>(KubeVirtType, 'kubevirt', NS);
  const cond = (k: KV, type: string) => k.status?.conditions?.find((c) => c.type === type);

  /** Plays the workload controllers: every managed Deployment/DaemonSet reports itself rolled out and ready. */
  const markReady = (types?: ResourceType[]) => markWorkloadsReady(client, NS, types);

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false, scheduler: false });
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath);
    const crd = kubectl('apply', '-f', path.join(crdsDir, 'kubevirt.io_kubevirts.yaml'));
    expect(crd.status, crd.stderr).toBe(0);
    await waitFor(
      'the KubeVirt CRD established',
      async () => crdEstablished(client, 'kubevirts.kubevirt.io'),
      60_000,
      200,
    );
    await client.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await startOperator();
  }, 180_000);

  afterAll(async () => {
    await op?.stop();
    await cp?.stop();
  });

  it('installs every component from the KubeVirt CR and reports Deploying', async () => {
    await client.create<KV>(KubeVirtType, kubeVirtCr(NS));
    const k = await waitFor(
      'Deploying',
      async () => {
        const k = await kv();
        return k.status?.phase === 'Deploying' ? k : undefined;
      },
      60_000,
      200,
    );
    expect(k.metadata?.finalizers).toContain('foregroundDeleteKubeVirt');
    expect(cond(k, 'Progressing')).toMatchObject({ status: 'True', reason: 'DeploymentInProgress' });
    expect(cond(k, 'Available')?.status).toBe('False');
    expect(k.status?.targetKubeVirtVersion).toBe('v1');
    const api = await client.get<KubeObject>(DeploymentType, 'virt-api', NS);
    const pod = (
      api.spec as {
        template: { spec: { nodeSelector: Record<string, string>; containers: { image: string }[] } };
      }
    ).template.spec;
    expect(pod.containers[0]!.image).toBe('localhost/kubevirt-ts/kubevirt-ts:v1');
    expect((pod.containers[0] as { imagePullPolicy?: string }).imagePullPolicy).toBe('IfNotPresent');
    expect(pod.nodeSelector['node-role.kubernetes.io/infra']).toBe('');
    const handler = await client.get<KubeObject>(DaemonSetType, 'virt-handler', NS);
    expect(
      (handler.spec as { template: { spec: { nodeSelector: Record<string, string> } } }).template.spec
        .nodeSelector['kubevirt.io/workloads'],
    ).toBe('true');
    expect(handler.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('virt-operator');
    expect(handler.metadata?.annotations?.[VERSION_ANNOTATION]).toBe('v1');
    await client.get(DeploymentType, 'virt-controller', NS);
    // upstream's PodDisruptionBudgets for the two-replica Deployments.
    for (const name of ['virt-api-pdb', 'virt-controller-pdb']) {
      const pdb = await client.get<KubeObject & { spec: { minAvailable: number } }>(
        PodDisruptionBudgetType,
        name,
        NS,
      );
      expect(pdb.spec.minAvailable).toBe(1);
    }
    await client.get(CustomResourceDefinitionType, 'virtualmachines.kubevirt.io');
    await client.get(ValidatingWebhookConfigurationType, 'virt-api-validator');
    const apisvc = await client.get<KubeObject>(APIServiceType, 'v1.subresources.kubevirt.io');
    await client.get(ClusterRoleType, 'kubevirt.io:view');
    // The APIService and the webhooks trust the CA bundle the ConfigMap publishes.
    const bundle = await caBundle(client, NS);
    expect(apiServiceBundle(apisvc)).toBe(bundle);
    const leaf = await tlsCert(client, 'kubevirt-virt-api-certs', NS);
    expect(certInfo(leaf).dnsNames).toContain('virt-api.kubevirt.svc');
    expect(await signedBy(leaf, splitBundle(bundle)[0]!)).toBe(true);
    for (const s of ['kubevirt-ca', 'kubevirt-virt-handler-certs', 'kubevirt-virt-handler-server-certs'])
      await client.get(SecretType, s, NS);
  }, 90_000);

  it('reports Deployed and Available once the components are ready (kubectl wait works)', async () => {
    await markReady();
    const w = await kubectlAsync(
      'wait',
      'kv',
      'kubevirt',
      '-n',
      NS,
      '--for',
      'condition=Available',
      '--timeout=60s',
    );
    expect(w.status, `${w.stderr} ${JSON.stringify((await kv()).status)} ${errors.join('; ')}`).toBe(0);
    const k = await kv();
    expect(k.status?.phase).toBe('Deployed');
    expect(cond(k, 'Available')).toMatchObject({ status: 'True', reason: 'AllComponentsReady' });
    expect(cond(k, 'Degraded')?.status).toBe('False');
    expect(k.status?.observedKubeVirtVersion).toBe('v1');
    expect(k.status?.observedGeneration).toBe(k.metadata?.generation);
  }, 90_000);

  it('repairs drift: a deleted Deployment comes back', async () => {
    const before = await client.get<KubeObject>(DeploymentType, 'virt-controller', NS);
    await client.delete(DeploymentType, 'virt-controller', { namespace: NS });
    const again = await waitFor(
      'virt-controller re-created',
      async () => {
        const d = await client.get<KubeObject>(DeploymentType, 'virt-controller', NS);
        return d.metadata?.uid !== before.metadata?.uid ? d : undefined;
      },
      30_000,
      200,
    );
    expect(again.metadata?.annotations?.[VERSION_ANNOTATION]).toBe('v1');
    await waitFor(
      'Deploying while it rolls out',
      async () => (await kv()).status?.phase === 'Deploying',
      30_000,
      200,
    );
    await markReady();
    await waitFor('Deployed again', async () => (await kv()).status?.phase === 'Deployed', 30_000, 200);
  }, 90_000);

  it('rotates the CA before expiry, keeping the old CA in the bundle, and re-issues the leaves', async () => {
    const secret = (n: string) => tlsCert(client, n, NS);
    const oldCa = await secret('kubevirt-ca');
    const oldLeaf = await secret('kubevirt-virt-api-certs');
    // 70 minutes later: past the CA's renewal point (2h - 1h) and the leaves' (1h - 30m).
    clock += 70 * 60_000;
    // Wake the operator (its requeue timer is in real time): touch a watched object.
    await client.delete(SecretType, 'kubevirt-virt-handler-certs', { namespace: NS });
    const newCa = await waitFor(
      'a new CA',
      async () => {
        const c = await secret('kubevirt-ca');
        return c !== oldCa ? c : undefined;
      },
      30_000,
      200,
    );
    const bundle = await waitFor(
      'bundle with both CAs',
      async () => {
        const b = await caBundle(client, NS);
        return splitBundle(b).length === 2 ? b : undefined;
      },
      30_000,
      200,
    );
    expect(splitBundle(bundle)[0]!.trim()).toBe(newCa.trim());
    expect(splitBundle(bundle)[1]!.trim()).toBe(oldCa.trim());
    const newLeaf = await waitFor(
      'a new virt-api certificate',
      async () => {
        const l = await secret('kubevirt-virt-api-certs');
        return l !== oldLeaf ? l : undefined;
      },
      30_000,
      200,
    );
    expect(await signedBy(newLeaf, newCa)).toBe(true);
    expect(certInfo(newCa).notAfter.getTime()).toBeGreaterThan(certInfo(oldCa).notAfter.getTime());
    await secret('kubevirt-virt-handler-certs');
    const apisvc = await client.get<KubeObject>(APIServiceType, 'v1.subresources.kubevirt.io');
    await waitFor(
      'APIService trusts the new bundle',
      async () => {
        const a = await client.get<KubeObject>(APIServiceType, 'v1.subresources.kubevirt.io');
        return apiServiceBundle(a) === bundle;
      },
      60_000,
      500,
    );
    expect(apisvc).toBeDefined();
  }, 120_000);

  it('a second replica waits for the virt-operator Lease and takes over when the leader stops', async () => {
    const standby = newOperator();
    const started = standby.start();
    // The standby's informers sync, but it does not reconcile without the Lease.
    await new Promise((r) => setTimeout(r, 1500));
    expect(standby.manager.isLeader()).toBe(false);
    expect(op!.manager.isLeader()).toBe(true);
    await op!.stop();
    await started;
    expect(standby.manager.isLeader()).toBe(true);
    op = standby;
    // The new leader reconciles: a deleted Service comes back.
    await client.delete(ServiceType, 'virt-api', { namespace: NS });
    await waitFor(
      'virt-api Service re-created by the new leader',
      async () => client.get(ServiceType, 'virt-api', NS),
      30_000,
      200,
    );
  }, 60_000);

  it('refuses a second KubeVirt CR with ExistingDeployment', async () => {
    // virt-api's webhook on kubevirts would answer this create; virt-api does not run here.
    await op!.stop();
    await client.delete(ValidatingWebhookConfigurationType, 'virt-api-validator');
    // The API server's webhook configuration cache catches up with the deletion shortly.
    await waitFor(
      'KubeVirt writes admitted without virt-api',
      async () => {
        await client.create<KV>(KubeVirtType, {
          apiVersion: 'kubevirt.io/v1',
          kind: 'KubeVirt',
          metadata: { name: 'second', namespace: NS },
          spec: {},
        });
        return true;
      },
      30_000,
      500,
    );
    // An image tag change: the upgrade below.
    const k = await kv();
    await client.update<KV>(KubeVirtType, { ...k, spec: { ...k.spec, imageTag: 'v2' } });
    await startOperator();
    const second = await waitFor(
      'second refused',
      async () => {
        const s = await client.get<KV>(KubeVirtType, 'second', NS);
        return cond(s, 'Degraded')?.status === 'True' ? s : undefined;
      },
      30_000,
      200,
    );
    expect(cond(second, 'Degraded')?.reason).toBe('ExistingDeployment');
    expect(second.metadata?.finalizers ?? []).not.toContain('foregroundDeleteKubeVirt');
  }, 120_000);

  it('upgrades on an image tag change: virt-api and virt-controller first, virt-handler after them', async () => {
    const k = await waitFor(
      'UpdateInProgress',
      async () => {
        const k = await kv();
        return cond(k, 'Progressing')?.reason === 'UpdateInProgress' ? k : undefined;
      },
      30_000,
      200,
    );
    expect(k.status?.targetKubeVirtVersion).toBe('v2');
    expect(k.status?.observedKubeVirtVersion).toBe('v1');
    for (const name of ['virt-api', 'virt-controller'])
      await waitFor(
        `${name} at v2`,
        async () => (await versionOf(client, DeploymentType, name, NS)) === 'v2',
        30_000,
        200,
      );
    // The handler waits while the Deployments have not rolled out.
    const h = await client.get<KubeObject>(DaemonSetType, 'virt-handler', NS);
    expect(h.metadata?.annotations?.[VERSION_ANNOTATION]).toBe('v1');
    await markReady([DeploymentType]);
    await waitFor(
      'virt-handler at v2',
      async () => {
        if ((await versionOf(client, DaemonSetType, 'virt-handler', NS)) === 'v2') return true;
        const api = await client.get<KubeObject>(DeploymentType, 'virt-api', NS);
        throw new Error(
          `${JSON.stringify((await kv()).status?.conditions?.[0])} ${errors.slice(-3).join('; ')} gen=${api.metadata?.generation} ${JSON.stringify(api.status)}`,
        );
      },
      30_000,
      200,
    );
    const img = (await client.get<KubeObject>(DaemonSetType, 'virt-handler', NS)).spec as {
      template: { spec: { containers: { image: string }[] } };
    };
    expect(img.template.spec.containers[0]!.image).toBe('localhost/kubevirt-ts/kubevirt-ts:v2');
    await markReady();
    const done = await waitFor(
      'Deployed at v2',
      async () => {
        const k = await kv();
        return k.status?.phase === 'Deployed' && k.status.observedKubeVirtVersion === 'v2' ? k : undefined;
      },
      30_000,
      200,
    );
    expect(cond(done, 'Available')?.status).toBe('True');
  }, 120_000);

  it('removes everything it installed when the CR is deleted, then its finalizer', async () => {
    await client.delete(KubeVirtType, 'second', { namespace: NS });
    await client.delete(KubeVirtType, 'kubevirt', { namespace: NS });
    // The CRDs go first (the API server drops their objects and storage: minutes under
    // load), then the components, then the CR's finalizer.
    await waitFor('KubeVirt gone', async () => isNotFound(kv()), 300_000, 500);
    expect((await client.list(DeploymentType, { namespace: NS })).items).toHaveLength(0);
    expect((await client.list(DaemonSetType, { namespace: NS })).items).toHaveLength(0);
    await expect(client.get(APIServiceType, 'v1.subresources.kubevirt.io')).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(client.get(SecretType, 'kubevirt-ca', NS)).rejects.toBeInstanceOf(NotFoundError);
    const crds = await waitFor(
      'the installed CRDs gone',
      async () => {
        const names = (await client.list(CustomResourceDefinitionType)).items.map(
          (c) => c.metadata?.name ?? '',
        );
        return names.filter((n) => n.endsWith('kubevirt.io')).length === 1 ? names : undefined;
      },
      // The API server drops every CRD's objects and its storage first: minutes under load.
      300_000,
      500,
    );
    // What is left of kubevirt.io is the operator manifest's KubeVirt CRD.
    expect(crds.filter((n) => n.endsWith('kubevirt.io'))).toEqual(['kubevirts.kubevirt.io']);
    // The VolumeSnapshot CRDs it created stay (the cluster's: deleting one deletes every VolumeSnapshot).
    const snap = (await client.list(CustomResourceDefinitionType)).items.filter((c) =>
      c.metadata?.name?.endsWith('.snapshot.storage.k8s.io'),
    );
    expect(snap.map((c) => c.metadata?.labels?.['kubevirt-ts.io/created-if-absent-by'])).toEqual(
      Array(3).fill('virt-operator'),
    );
  }, 420_000);
});
