/**
 * evictPod: through the real API server's `pods/{name}/eviction` subresource (a pod the
 * eviction removes, a pod already gone; a budget's 429 is not exercised: the test's API
 * server runs no kubelet, and a pod that is not running is evicted regardless), and
 * on the embedded store, which does not serve the subresource (a delete).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evictPod } from '../../../src/controllers/common/evict-pod';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { KubeClient } from '../../../src/controllers/runtime/kube/client';
import { NamespaceType, PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../../src/controllers/runtime/types';
import { integration } from '../../support/integration';
import { available, sharedControlPlane, unavailableReason } from '../../support/kube';
import { waitFor } from '../../support/wait';

const pod = (name: string, ns: string) =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  }) as KubeObject;
const gone = (c: ObjectClient, name: string, ns: string) =>
  c.get(PodType, name, ns).then(
    (p) => p.metadata?.deletionTimestamp !== undefined,
    () => true,
  );

describe.runIf(integration('evictPod against an API server', available(), unavailableReason))(
  'evictPod (API server)',
  () => {
    const ns = `kvts-evict-${process.pid}`;
    let client: KubeClient;
    beforeAll(async () => {
      client = KubeClient.fromKubeconfig((await sharedControlPlane()).kubeconfigPath);
      await client.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    }, 60_000);
    afterAll(async () => {
      await client?.delete(NamespaceType, ns).catch(() => undefined);
    });

    it('evicts a pod; a pod already gone is fine', async () => {
      await client.create(PodType, pod('free', ns));
      await evictPod(client, ns, 'free');
      expect(await waitFor('free evicted', () => gone(client, 'free', ns))).toBe(true);
      await evictPod(client, ns, 'never-there');
    }, 60_000);
  },
);

describe('evictPod (embedded store)', () => {
  it('deletes the pod: the store serves no eviction subresource', async () => {
    const store = await EmbeddedStore.open({});
    try {
      await store.create(PodType, pod('p', 'default'));
      await evictPod(store, 'default', 'p');
      expect(await gone(store, 'p', 'default')).toBe(true);
      await evictPod(store, 'default', 'p');
    } finally {
      await store.close();
    }
  });
});
