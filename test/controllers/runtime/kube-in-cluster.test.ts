/**
 * In-cluster configuration against the real API server: a service-account token from the
 * TokenRequest API, laid out as a pod sees it, authenticates KubeClient.inCluster(); RBAC
 * then answers with a typed Forbidden naming the service account.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  ForbiddenError,
  KubeClient,
  type ResourceType,
} from '../../../src/controllers/runtime';
import { integration } from '../../support/integration';
import { available, sharedControlPlane, unavailableReason } from '../../support/kube';

const run = integration('kube-apiserver', available(), unavailableReason);

describe.skipIf(!run)('KubeClient.inCluster', () => {
  it('authenticates as the pod service account and gets typed RBAC errors', async () => {
    const cp = await sharedControlPlane();
    const admin = KubeClient.fromKubeconfig(cp.kubeconfigPath);
    // POST serviceaccounts/default/token (the TokenRequest subresource).
    const tokenRequest: ResourceType = {
      group: '',
      version: 'v1',
      kind: 'TokenRequest',
      plural: 'serviceaccounts/default/token',
      namespaced: true,
    };
    const tr = await admin.create<{ metadata?: { namespace?: string }; status?: { token?: string } }>(
      tokenRequest,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        metadata: { namespace: 'default' },
        spec: { expirationSeconds: 3600 },
      } as never,
    );
    admin.close();
    expect(tr.status?.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/); // a signed JWT

    const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-incluster-'));
    const sa = path.join(prefix, 'var/run/secrets/kubernetes.io/serviceaccount');
    fs.mkdirSync(sa, { recursive: true });
    fs.writeFileSync(path.join(sa, 'token'), tr.status!.token!);
    fs.copyFileSync(cp.tls.ca, path.join(sa, 'ca.crt'));
    fs.writeFileSync(path.join(sa, 'namespace'), 'default');
    const url = new URL(cp.server);
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = url.hostname;
    process.env.KUBERNETES_SERVICE_PORT = url.port;
    const client = KubeClient.inCluster({ pathPrefix: prefix });
    try {
      expect(client.namespace).toBe('default');
      const err = await client.list(ConfigMapType, { namespace: 'kube-system' }).catch((e) => e);
      expect(err).toBeInstanceOf(ForbiddenError);
      expect(err.reason).toBe('Forbidden');
      expect(err.message).toContain('system:serviceaccount:default:default');
    } finally {
      client.close();
      process.env.KUBERNETES_SERVICE_HOST = saved.host;
      process.env.KUBERNETES_SERVICE_PORT = saved.port;
      if (saved.host === undefined) delete process.env.KUBERNETES_SERVICE_HOST;
      if (saved.port === undefined) delete process.env.KUBERNETES_SERVICE_PORT;
      fs.rmSync(prefix, { recursive: true, force: true });
    }
  });
});
