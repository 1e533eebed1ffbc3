/**
 * virt-api in the plain manifests gets its certificates without virt-operator (issue 24):
 * manifests/25-virt-api.yaml applied on a real kube-apiserver (no node: its pods do not
 * run), then one pass of virt-certs as its own service account (the RBAC the manifest
 * gives it) writes upstream's certificate Secrets and patches the CA bundle into
 * virt-api's APIService and webhooks; the bundle verifies virt-api's serving certificate
 * for its Service's name; a second pass changes nothing.
 */
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { crdsDir } from '../../scripts/gen-crds';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { ConfigMapType, SecretType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { keepCertificates } from '../../src/controllers/virt-operator/cert-keeper';
import {
  defaultInstallOptions,
  renderPlainInstall,
} from '../../src/controllers/virt-operator/components/index';
import {
  APIServiceType,
  MutatingWebhookConfigurationType,
  ValidatingWebhookConfigurationType,
} from '../../src/controllers/virt-operator/resource-types';
import { integration } from '../support/integration';
import {
  type ControlPlane,
  available as kubeAvailable,
  unavailableReason as kubeUnavailableReason,
  startControlPlane,
} from '../support/kube';
import { kubectl, runAsync } from './virt-api-cluster';

const run = integration('plain manifests: virt-api certificates', kubeAvailable(), kubeUnavailableReason);

type Data = KubeObject & { data?: Record<string, string> };
type Hooks = KubeObject & { webhooks: Array<{ clientConfig: { caBundle?: string } }> };

describe.runIf(run)("the plain manifests' virt-certs on a real API server", () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  let certs: KubeClient;
  const ns = 'kubevirt';

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false, scheduler: false });
    admin = KubeClient.fromKubeconfig(cp.kubeconfigPath);
    const files = renderPlainInstall(defaultInstallOptions(), crdsDir);
    const file = join(cp.dir, 'plain.yaml');
    writeFileSync(
      file,
      [...files['00-namespace.yaml']!, ...files['25-virt-api.yaml']!]
        .map((o) => `---\n${stringify(o)}`)
        .join(''),
    );
    const k = (args: string[]) => runAsync(kubectl, ['--kubeconfig', cp.kubeconfigPath, ...args]);
    const applied = await k(['apply', '-f', file]);
    expect(applied.status, applied.stderr).toBe(0);
    const token = await k(['create', 'token', 'virt-certs', '-n', ns]);
    expect(token.status, token.stderr).toBe(0);
    const kubeconfig = join(cp.dir, 'virt-certs.kubeconfig');
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: cp.server, 'certificate-authority': cp.tls.ca } }],
        users: [{ name: 'virt-certs', user: { token: token.stdout.trim() } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'virt-certs' } }],
        'current-context': 'c',
      }),
    );
    certs = KubeClient.fromKubeconfig(kubeconfig);
  }, 300_000);

  afterAll(async () => {
    certs?.close();
    admin?.close();
    await cp?.stop();
  }, 120_000);

  it('one pass makes the certificates and sets every caBundle to the CA bundle', async () => {
    const r = await keepCertificates(certs, ns, new Date());
    expect(r.renewed.sort()).toEqual([
      'cdi-uploadproxy-server-cert',
      'cdi-uploadserver-client-cert',
      'kubevirt-ca',
      'kubevirt-controller-certs',
      'kubevirt-exportproxy-certs',
      'kubevirt-ts-upload-token-signer',
      'kubevirt-virt-api-certs',
      'kubevirt-virt-handler-certs',
      'kubevirt-virt-handler-server-certs',
    ]);
    expect(r.missing).toEqual([]);
    const bundle = (await admin.get<Data>(ConfigMapType, 'kubevirt-ca', ns)).data?.['ca-bundle'] ?? '';
    const b64 = Buffer.from(bundle).toString('base64');
    // Both of virt-api's APIServices: subresources.kubevirt.io and CDI's upload.cdi.kubevirt.io.
    for (const name of ['v1.subresources.kubevirt.io', 'v1beta1.upload.cdi.kubevirt.io']) {
      const apiService = await admin.get<KubeObject & { spec: { caBundle?: string } }>(APIServiceType, name);
      expect(apiService.spec.caBundle, name).toBe(b64);
    }
    for (const [type, name] of [
      [MutatingWebhookConfigurationType, 'virt-api-mutator'],
      [ValidatingWebhookConfigurationType, 'virt-api-validator'],
    ] as const) {
      const hooks = await admin.get<Hooks>(type, name);
      expect(hooks.webhooks.length).toBeGreaterThan(0);
      for (const h of hooks.webhooks) expect(h.clientConfig.caBundle, `${name}`).toBe(b64);
    }
    // The bundle's CA signed virt-api's serving certificate, named for its Service.
    const serving = await admin.get<Data>(SecretType, 'kubevirt-virt-api-certs', ns);
    const leaf = new X509Certificate(Buffer.from(serving.data?.['tls.crt'] ?? '', 'base64'));
    const ca = new X509Certificate(bundle);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkHost('virt-api.kubevirt.svc')).toBe('virt-api.kubevirt.svc');
    // virt-handler's client pair for virt-api carries the bundle too (its ca.crt).
    const client = await admin.get<Data>(SecretType, 'kubevirt-virt-handler-certs', ns);
    expect(Buffer.from(client.data?.['ca.crt'] ?? '', 'base64').toString()).toBe(bundle);
  });

  it('a second pass renews nothing and writes nothing', async () => {
    const rv = async () =>
      [
        (await admin.get<Data>(SecretType, 'kubevirt-ca', ns)).metadata?.resourceVersion,
        (await admin.get<Hooks>(ValidatingWebhookConfigurationType, 'virt-api-validator')).metadata
          ?.resourceVersion,
      ].join('/');
    const before = await rv();
    const r = await keepCertificates(certs, ns, new Date());
    expect(r.renewed).toEqual([]);
    expect(await rv()).toBe(before);
  });

  it("virt-certs's account may not touch other APIServices", async () => {
    await expect(certs.get(APIServiceType, 'v1.apps')).rejects.toThrow(/forbidden/i);
  });
});
