import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigMapType, EmbeddedStore } from '../../../../src/controllers/runtime';
import { serveEmbeddedStore } from '../../../../src/controllers/runtime/embedded/server';
import { KubeClient } from '../../../../src/controllers/runtime/kube/client';
import { clientsetOf } from '../../../../src/controllers/runtime/kube/clientset';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function served(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-ratelimit-'));
  const store = await EmbeddedStore.open();
  const server = await serveEmbeddedStore(store, path.join(dir, 'api.sock'));
  cleanups.push(async () => {
    await server.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return server.socketPath;
}

/** Milliseconds `n` list calls take, one after another. */
async function timeCalls(client: KubeClient, n: number): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < n; i++) await client.list(ConfigMapType, { namespace: 'default' });
  return performance.now() - t;
}

describe('KubeClient rate limit', () => {
  it('holds requests to qps after the burst, and a new limit applies at once', async () => {
    const client = KubeClient.fromSocket(await served(), { qps: 20, burst: 2 });
    cleanups.push(() => client.close());
    expect(client.rateLimit).toEqual({ qps: 20, burst: 2 });
    // 2 from the burst, then 4 more at 20/s: at least ~200 ms.
    expect(await timeCalls(client, 6)).toBeGreaterThanOrEqual(180);
    expect(client.setRateLimit(20, 2)).toBe(false);
    expect(client.setRateLimit(10_000, 10_000)).toBe(true);
    expect(client.rateLimit).toEqual({ qps: 10_000, burst: 10_000 });
    expect(await timeCalls(client, 6)).toBeLessThan(150);
  });
});

describe('clientsetOf', () => {
  it("splits requests by upstream's clientsets, each with its own rate limit", () => {
    const of = (paths: string[]) => paths.map(clientsetOf);
    expect(
      of([
        '/api/v1/namespaces/default/pods/p',
        '/api/v1/namespaces/default/events',
        '/apis/apps/v1/namespaces/default/controllerrevisions',
        '/apis/coordination.k8s.io/v1/namespaces/kubevirt/leases/l',
      ]),
    ).toEqual(['kubernetes', 'kubernetes', 'kubernetes', 'kubernetes']);
    expect(
      of([
        '/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/v',
        '/apis/snapshot.kubevirt.io/v1beta1/namespaces/default/virtualmachinesnapshots',
        '/apis/cdi.kubevirt.io/v1beta1/namespaces/default/datavolumes',
        '/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions',
        '/apis/snapshot.storage.k8s.io/v1/namespaces/default/volumesnapshots',
      ]),
    ).toEqual(['kubevirt', 'kubevirt', 'cdi', 'k8s.cni.cncf.io', 'snapshot.storage.k8s.io']);
  });
});
