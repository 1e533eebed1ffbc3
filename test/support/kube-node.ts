/**
 * Nodes without kubelets for a test control plane ({@link ./kube}): what the scheduler
 * needs to bind pods when no real kubelet registers itself.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

/** Options of {@link registerReadyNode}. */
export interface ReadyNodeOptions {
  labels?: Record<string, string>;
  /** Capacity and allocatable (default cpu 4, memory 8Gi, pods 110). */
  capacity?: Record<string, string>;
}

/**
 * Registers a Node the scheduler will bind pods to, standing in for a kubelet: creates it
 * (or takes the existing one), reports it Ready with the given capacity, and removes the
 * `node.kubernetes.io/not-ready` taint the TaintNodesByCondition admission plugin put on
 * it (the node lifecycle controller, which would remove it, is off in these control
 * planes). Nothing renews the Ready condition, and nothing needs to.
 */
export async function registerReadyNode(
  kubeconfigPath: string,
  name: string,
  opts: ReadyNodeOptions = {},
): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const capacity = opts.capacity ?? { cpu: '4', memory: '8Gi', pods: '110' };
  try {
    await core.createNode({
      body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, ...opts.labels } } },
    });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
  const now = new Date();
  // Controllers (ttl, the scheduler's cache) touch new nodes too: re-read on conflict.
  await retryOnConflict(async () => {
    const current = await core.readNode({ name });
    await core.replaceNodeStatus({
      name,
      body: {
        ...current,
        status: {
          ...current.status,
          capacity,
          allocatable: capacity,
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              message: 'registered by the kubevirt-ts test support',
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      },
    });
  });
  await retryOnConflict(async () => {
    const node = await core.readNode({ name });
    node.spec = {
      ...node.spec,
      taints: (node.spec?.taints ?? []).filter((t) => t.key !== 'node.kubernetes.io/not-ready'),
    };
    await core.replaceNode({ name, body: node });
  });
}

async function retryOnConflict(write: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if ((err as { code?: number }).code !== 409 || attempt >= 10) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}
