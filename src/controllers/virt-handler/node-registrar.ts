/**
 * Registers virt-handler's Node and keeps it current: creates it when nothing else has
 * (no kubelet, no local pod runtime yet), merges in the capability labels and device
 * resources, and stamps a heartbeat annotation periodically. Merge patches only, so the
 * kubelet's (or the pod runtime's) fields on the same Node are left alone.
 */
import { AlreadyExistsError, NotFoundError } from '../runtime/errors';
import { NodeType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { NodeLabels } from './node-labels';

/** Options of {@link NodeRegistrar}. */
export interface NodeRegistrarOptions {
  client: ObjectClient;
  nodeName: string;
  labels: Record<string, string>;
  /** Device resources, set as both capacity and allocatable. */
  resources: Record<string, string>;
  /** Heartbeat period in ms (default 60 s; 0 disables). */
  heartbeatMs?: number;
  now?: () => Date;
  onWrite?: () => void;
}

const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, 'Z');

/** Keeps one Node registered. */
export class NodeRegistrar {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: NodeRegistrarOptions) {}

  private now(): string {
    return stamp(this.o.now?.() ?? new Date());
  }

  /** Creates the Node if absent, then patches labels, heartbeat and device resources. */
  async register(): Promise<void> {
    const { client, nodeName } = this.o;
    try {
      await client.get(NodeType, nodeName);
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
      try {
        await client.create(NodeType, {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name: nodeName, labels: { 'kubernetes.io/hostname': nodeName } },
        } as KubeObject);
        this.o.onWrite?.();
      } catch (err) {
        if (!(err instanceof AlreadyExistsError)) throw err;
      }
    }
    await client.patch(
      NodeType,
      nodeName,
      { metadata: { labels: this.o.labels, annotations: { [NodeLabels.heartbeat]: this.now() } } },
      { type: 'merge' },
    );
    this.o.onWrite?.();
    await client.patch(
      NodeType,
      nodeName,
      { status: { capacity: this.o.resources, allocatable: this.o.resources } },
      { type: 'merge', subresource: 'status' },
    );
    this.o.onWrite?.();
    const every = this.o.heartbeatMs ?? 60_000;
    if (every > 0 && !this.timer) {
      this.timer = setInterval(() => void this.heartbeat().catch(() => undefined), every);
      this.timer.unref?.();
    }
  }

  /** Stamps the heartbeat annotation and re-asserts schedulability. */
  async heartbeat(): Promise<void> {
    await this.o.client.patch(
      NodeType,
      this.o.nodeName,
      {
        metadata: {
          labels: { [NodeLabels.schedulable]: 'true' },
          annotations: { [NodeLabels.heartbeat]: this.now() },
        },
      },
      { type: 'merge' },
    );
    this.o.onWrite?.();
  }

  /** Stops heartbeats; with `unschedulable`, marks the node unschedulable for VMIs first. */
  async stop(unschedulable = false): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (unschedulable) {
      await this.o.client
        .patch(
          NodeType,
          this.o.nodeName,
          { metadata: { labels: { [NodeLabels.schedulable]: 'false' } } },
          { type: 'merge' },
        )
        .catch(() => undefined);
    }
  }
}
