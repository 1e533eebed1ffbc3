/**
 * The service-account token volume against a real kube-apiserver: a pod carrying the
 * projected `kube-api-access-*` volume the ServiceAccount admission plugin adds (the
 * shared test control plane disables that plugin, so the test writes the same volume),
 * materialized by the pod runtime as kubelet does: a token from the TokenRequest API bound to the
 * pod, the cluster CA from `kube-root-ca.crt`, the namespace from the downward API.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../../src/controllers/common/pod';
import { materializeVolume } from '../../../../src/controllers/local/pod-runtime/pod-volumes';
import { KubeClient, PodType } from '../../../../src/controllers/runtime';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { integration } from '../../../support/integration';
import { available, sharedControlPlane, unavailableReason } from '../../../support/kube';
import { waitFor } from '../../../support/wait';

/** The volume upstream's ServiceAccount admission plugin adds (plugin/pkg/admission/serviceaccount). */
const KUBE_API_ACCESS = {
  name: 'kube-api-access-kvts1',
  projected: {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      {
        downwardAPI: {
          items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
        },
      },
    ],
  },
};

const run = integration('kube-apiserver', available(), unavailableReason);

describe.skipIf(!run)('projected service-account volume (real API server)', () => {
  it('writes token, ca.crt and namespace of the kube-api-access volume', async () => {
    const cp = await sharedControlPlane();
    const client = KubeClient.fromKubeconfig(cp.kubeconfigPath);
    const root = mkdtempSync(join(tmpdir(), 'kvts-podvol-sa-'));
    const name = `kvts-sa-${process.pid}`;
    try {
      // The ServiceAccount controller creates `default` in each namespace; admission needs it.
      const pod = await waitFor(
        'the pod created with its service account',
        () =>
          client
            .create<Pod & KubeObject>(PodType, {
              apiVersion: 'v1',
              kind: 'Pod',
              metadata: { name, namespace: 'default' },
              // A node nobody runs: the pod stays Pending, only its object is needed.
              spec: {
                nodeName: `kvts-no-such-node-${process.pid}`,
                serviceAccountName: 'default',
                containers: [{ name: 'c', image: 'x' }],
                volumes: [KUBE_API_ACCESS],
              },
            } as Pod & KubeObject)
            .catch(() => undefined),
        60_000,
        500,
      );
      const i = (pod.spec?.volumes ?? []).findIndex((v) => v.name.startsWith('kube-api-access-'));
      expect(i).toBeGreaterThanOrEqual(0);
      const vol = pod.spec!.volumes![i];
      const m = await waitFor(
        'the volume materialized (kube-root-ca.crt is published asynchronously)',
        () => materializeVolume(client, join(root, 'pod'), pod, vol, i),
        30_000,
        500,
      );
      expect(m.hostPath).toBe(join(root, 'pod', 'volumes', 'kubernetes.io~projected', vol.name));
      const token = readFileSync(join(m.hostPath, 'token'), 'utf8');
      expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
      expect(claims.sub).toBe('system:serviceaccount:default:default');
      expect(claims['kubernetes.io']?.pod?.name).toBe(name);
      expect(readFileSync(join(m.hostPath, 'ca.crt'), 'utf8')).toBe(readFileSync(cp.tls.ca, 'utf8'));
      expect(readFileSync(join(m.hostPath, 'namespace'), 'utf8')).toBe('default');
      // defaultMode 0644 as admission sets it (420).
      expect(statSync(join(m.hostPath, 'token')).mode & 0o777).toBe(0o644);
    } finally {
      await client
        .delete(PodType, name, { namespace: 'default', gracePeriodSeconds: 0 })
        .catch(() => undefined);
      client.close();
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
