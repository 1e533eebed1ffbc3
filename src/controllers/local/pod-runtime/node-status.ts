/**
 * The kubelet's share of the Node, for a node without one: registers the Node with its
 * basic labels and capacity (cpu, memory, pods, ephemeral storage), keeps its Ready
 * condition, and renews its Lease in `kube-node-lease`, as the node lifecycle controller
 * of a real control plane expects. Merge patches, so virt-handler's labels and device
 * resources on the same Node stay.
 */
import { statfsSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { AlreadyExistsError, NotFoundError } from '../../runtime/errors';
import { LeaseType, NodeType } from '../../runtime/resources';
import { retryOnConflict } from '../../runtime/retry-on-conflict';
import type { KubeObject, ObjectClient } from '../../runtime/types';

/** Options of {@link NodeStatusKeeper}. */
export interface NodeStatusOptions {
  client: ObjectClient;
  nodeName: string;
  /** Directory whose filesystem backs pods' ephemeral storage. */
  root: string;
  /** Lease renewal period, ms (default 10 s; the lease lasts 40 s). */
  renewMs?: number;
  onWrite?: (kind: 'Node' | 'Lease') => void;
}

const LEASE_NAMESPACE = 'kube-node-lease';
const LEASE_SECONDS = 40;
const seconds = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const micro = () =>
  new Date().toISOString().replace(/(\.\d+)?Z$/, (_m, f) => `${(f ?? '.000').padEnd(7, '0')}Z`);

/** Kubernetes' name of the host architecture. */
export function kubeArch(nodeArch: string = process.arch): string {
  return (
    ({ x64: 'amd64', arm64: 'arm64', s390x: 's390x', ppc64: 'ppc64le' } as Record<string, string>)[
      nodeArch
    ] ?? nodeArch
  );
}

/** Registers and heartbeats one Node. */
export class NodeStatusKeeper {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: NodeStatusOptions) {}

  private capacity(): Record<string, string> {
    let eph = 100 * 1024 ** 3;
    try {
      const fs = statfsSync(this.o.root);
      eph = fs.bavail * fs.bsize;
    } catch {
      // The root may not exist yet; a nominal size is fine for scheduling.
    }
    return {
      cpu: String(cpus().length),
      memory: `${Math.floor(totalmem() / 1024)}Ki`,
      pods: '110',
      'ephemeral-storage': String(eph),
    };
  }

  private readyCondition(now: string) {
    return {
      type: 'Ready',
      status: 'True',
      reason: 'KubeletReady',
      message: 'kubevirt-ts local pod runtime is posting ready status',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    };
  }

  /** Creates the Node if needed and marks it Ready; starts the lease renewals. */
  async start(): Promise<void> {
    const { client, nodeName } = this.o;
    const labels = {
      'kubernetes.io/hostname': nodeName,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': kubeArch(),
    };
    try {
      await client.create(NodeType, {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: nodeName, labels },
      } as KubeObject);
      this.o.onWrite?.('Node');
    } catch (e) {
      if (!(e instanceof AlreadyExistsError)) throw e;
      await client.patch(NodeType, nodeName, { metadata: { labels } }, { type: 'merge' });
      this.o.onWrite?.('Node');
    }
    await this.postStatus();
    await this.renewLease();
    await this.clearNotReadyTaint();
    // As the kubelet: renew the Lease and re-post the Ready heartbeat.
    this.timer = setInterval(() => {
      void this.renewLease()
        .then(() => this.postStatus())
        .catch(() => undefined);
    }, this.o.renewMs ?? 10_000);
    this.timer.unref?.();
  }

  /** Posts capacity, allocatable and the Ready condition (the kubelet's node status). */
  async postStatus(): Promise<void> {
    const now = seconds();
    const node = await this.o.client.get<KubeObject & { status?: { conditions?: Array<{ type: string }> } }>(
      NodeType,
      this.o.nodeName,
    );
    const cap = this.capacity();
    const others = (node.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
    await this.o.client.patch(
      NodeType,
      this.o.nodeName,
      {
        status: {
          capacity: cap,
          allocatable: cap,
          conditions: [...others, this.readyCondition(now)],
          addresses: [
            { type: 'InternalIP', address: '127.0.0.1' },
            { type: 'Hostname', address: this.o.nodeName },
          ],
          nodeInfo: {
            architecture: kubeArch(),
            operatingSystem: 'linux',
            kubeletVersion: 'v1.34.0-kubevirt-ts',
            containerRuntimeVersion: 'kubevirt-ts-podruntime://0.1.0',
            kernelVersion: '',
            osImage: '',
            kubeProxyVersion: '',
            machineID: '',
            systemUUID: '',
            bootID: '',
          },
        },
      },
      { type: 'merge', subresource: 'status' },
    );
    this.o.onWrite?.('Node');
  }

  /**
   * Removes the `node.kubernetes.io/not-ready` taint admission puts on a new Node, once
   * Ready is posted. The node lifecycle controller does this where it runs; control planes
   * without it (as in this project's tests) would otherwise never schedule to the node.
   */
  async clearNotReadyTaint(): Promise<void> {
    // Others write the Node meanwhile (the node lifecycle controller's taints, virt-handler's
    // labels): on a conflict, read it again, as the kubelet's RetryOnConflict does.
    await retryOnConflict(async () => {
      const node = await this.o.client.get<KubeObject & { spec?: { taints?: Array<{ key: string }> } }>(
        NodeType,
        this.o.nodeName,
      );
      const taints = node.spec?.taints ?? [];
      const keep = taints.filter((t) => t.key !== 'node.kubernetes.io/not-ready');
      if (keep.length === taints.length) return;
      await this.o.client.update(NodeType, { ...node, spec: { ...node.spec, taints: keep } });
      this.o.onWrite?.('Node');
    });
  }

  /** Creates or renews the node's Lease. */
  async renewLease(): Promise<void> {
    const { client, nodeName } = this.o;
    const spec = { holderIdentity: nodeName, leaseDurationSeconds: LEASE_SECONDS, renewTime: micro() };
    try {
      const lease = await client.get<KubeObject & { spec?: object }>(LeaseType, nodeName, LEASE_NAMESPACE);
      await client.update(LeaseType, { ...lease, spec: { ...lease.spec, ...spec } });
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
      await client
        .create(LeaseType, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: nodeName, namespace: LEASE_NAMESPACE },
          spec,
        } as KubeObject)
        .catch((err) => {
          if (!(err instanceof AlreadyExistsError)) throw err;
        });
    }
    this.o.onWrite?.('Lease');
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
