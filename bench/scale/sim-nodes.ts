/**
 * The simulated nodes of the scale benchmark: Node objects with capacity, Ready and
 * untainted (as a kubelet registering itself leaves them), with the labels virt-handler's
 * node labeller would set, and a Lease per node renewed every 10 s in kube-node-lease
 * (the kubelet's heartbeat, as KWOK renews it upstream).
 */
import { ConflictError } from '../../src/controllers/runtime/errors';
import { LeaseType, NodeType } from '../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../src/controllers/runtime/types';

const LEASE_NS = 'kube-node-lease';
const RENEW_MS = 10_000;

/** Node capacity for `podsPerNode` launcher pods. */
export function nodeCapacity(podsPerNode: number): Record<string, string> {
  return { cpu: '256', memory: '2Ti', pods: String(podsPerNode), 'ephemeral-storage': '10Ti' };
}

/** Creates (or takes) each node, reports it Ready with `capacity`, and drops the not-ready taint. */
export async function registerNodes(
  client: ObjectClient,
  names: string[],
  capacity: Record<string, string>,
): Promise<void> {
  await Promise.all(names.map((n) => registerNode(client, n, capacity)));
}

async function registerNode(
  client: ObjectClient,
  name: string,
  capacity: Record<string, string>,
): Promise<void> {
  const labels = {
    'kubernetes.io/hostname': name,
    'kubernetes.io/arch': 'amd64',
    'kubevirt.io/schedulable': 'true',
    'machine-type.node.kubevirt.io/q35': 'true',
    type: 'kwok-like',
  };
  await client
    .create(NodeType, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } } as KubeObject)
    .catch((e) => {
      if (!(e instanceof ConflictError) && (e as { code?: number }).code !== 409) throw e;
    });
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await retryOnConflict(async () => {
    const node = await client.get<KubeObject>(NodeType, name);
    await client.updateStatus(NodeType, {
      ...node,
      status: {
        capacity,
        allocatable: capacity,
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'simulated by bench/scale',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      },
    } as KubeObject);
  });
  // TaintNodesByCondition put node.kubernetes.io/not-ready on the new node; the node
  // lifecycle controller that would lift it is off (no real kubelets).
  await retryOnConflict(async () => {
    const node = await client.get<KubeObject & { spec?: { taints?: Array<{ key: string }> } }>(
      NodeType,
      name,
    );
    const taints = node.spec?.taints ?? [];
    if (!taints.some((t) => t.key === 'node.kubernetes.io/not-ready')) return;
    await client.update(NodeType, {
      ...node,
      spec: { ...node.spec, taints: taints.filter((t) => t.key !== 'node.kubernetes.io/not-ready') },
    } as KubeObject);
  });
}

async function retryOnConflict(write: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      const conflict = err instanceof ConflictError || (err as { code?: number }).code === 409;
      if (!conflict || attempt >= 10) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

const microTime = () => new Date().toISOString().replace('Z', '000Z');

/** Renews one Lease per node every 10 s until stopped; resolves once each exists. */
export async function startLeases(client: ObjectClient, names: string[]): Promise<{ stop(): void }> {
  const leases = new Map<string, KubeObject>();
  const renew = async (name: string) => {
    const old = leases.get(name);
    const spec = { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microTime() };
    const next = old
      ? await client.update<KubeObject>(LeaseType, { ...old, spec } as KubeObject)
      : await client.create<KubeObject>(LeaseType, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace: LEASE_NS },
          spec,
        } as KubeObject);
    leases.set(name, next);
  };
  await Promise.all(names.map(renew));
  const timer = setInterval(() => {
    for (const n of names)
      renew(n).catch(async () => {
        // Lost a race or a write: take the current one and try again next round.
        leases.set(n, await client.get<KubeObject>(LeaseType, n, LEASE_NS).catch(() => leases.get(n)!));
      });
  }, RENEW_MS);
  return { stop: () => clearInterval(timer) };
}
