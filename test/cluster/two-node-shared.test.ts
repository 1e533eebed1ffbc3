/**
 * The tests' broker gives a file two nodes: `sharedCluster({ nodes: 2 })` adds a second
 * node to the run's shared cluster (scripts/cluster/extra-node.ts). It is Ready with the
 * broker's taint, so the one-node files' unpinned pods stay on node 1; a pod pinned to it
 * runs there and its log is read through the API server (node 2's kubelet).
 */
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { clusterUnavailableReason, SECOND_NODE_TAINT, sharedCluster } from '../support/cluster';
import { createTestNamespace } from '../support/cluster-namespace';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('two-node shared cluster', why === undefined, why ?? '');
const NS = 'cluster-two-node';

describe.skipIf(!enabled)('sharedCluster({ nodes: 2 })', () => {
  let info: ClusterInfo;
  let core: CoreV1Api;

  beforeAll(async () => {
    info = await sharedCluster({ nodes: 2 });
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    await createTestNamespace(core, NS);
  }, 300_000);

  afterAll(async () => {
    await core?.deleteNamespace({ name: NS }).catch(() => undefined);
  });

  const pod = (name: string, nodeName?: string): V1Pod => ({
    metadata: { name },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'main',
          image: info.images['virt-launcher'],
          imagePullPolicy: 'Never',
          command: ['busybox', 'sh', '-c', 'echo "on $(busybox hostname)"; exec busybox sleep 3600'],
        },
      ],
    },
  });
  const running = (name: string) =>
    waitFor(
      `pod ${name} Running`,
      async () => {
        const p = await core.readNamespacedPod({ name, namespace: NS });
        return p.status?.phase === 'Running' ? p : undefined;
      },
      120_000,
      250,
    );

  it('adds a Ready second node with the broker taint; unpinned pods stay on node 1', async () => {
    const node2 = info.extraNodes?.[0];
    expect(node2?.nodeName).toBe(`${info.nodeName}-2`);
    if (!node2) return;
    const node = await core.readNode({ name: node2.nodeName });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(node.spec?.taints).toContainEqual(expect.objectContaining(SECOND_NODE_TAINT));
    expect(node.status?.addresses).toContainEqual({ type: 'InternalIP', address: node2.nodeIP });
    await core.createNamespacedPod({ namespace: NS, body: pod('unpinned') });
    expect((await running('unpinned')).spec?.nodeName).toBe(info.nodeName);
  });

  it('runs a pod pinned to node 2 and reads its log through node 2 kubelet', async () => {
    const node2 = info.extraNodes?.[0];
    if (!node2) throw new Error('no second node');
    await core.createNamespacedPod({ namespace: NS, body: pod('pinned', node2.nodeName) });
    const p = await running('pinned');
    expect(p.spec?.nodeName).toBe(node2.nodeName);
    const last = Number(p.status?.podIP?.split('.')[3]);
    expect(last).toBeGreaterThanOrEqual(128);
    const log = await waitFor(
      'pinned log',
      async () => {
        const text = await core.readNamespacedPodLog({ name: 'pinned', namespace: NS });
        return text.includes('on pinned') ? text : undefined;
      },
      30_000,
      500,
    );
    expect(log.trim()).toBe('on pinned');
  });
});
