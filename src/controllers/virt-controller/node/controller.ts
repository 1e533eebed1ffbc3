/**
 * The node controller (upstream's pkg/virt-controller/watch/node/node.go): virt-handler
 * stamps its Node's `kubevirt.io/heartbeat` annotation periodically; a Node whose last
 * heartbeat is older than the timeout (upstream's 5 minutes), or that was deleted, is
 * unresponsive. Then the controller labels it `kubevirt.io/schedulable=false` (launcher
 * pods select `true`, so no new VMI lands there) and fails each of its active VMIs whose
 * launcher pod is gone or no longer running (phase Failed, reason NodeUnresponsive), so a
 * VM with runStrategy Always or RerunOnFailure starts a new VMI elsewhere. A VMI whose pod
 * still counts as running is left alone, as upstream: the node may only be cut off, its
 * guest still writing to the disks, until the pod is deleted (by the kubelet's node
 * lifecycle or an administrator fencing the node: `node.kubernetes.io/out-of-service`).
 * A Node without the annotation (no handler ever ran there) is never unresponsive.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import type { ControllerDeps, KeyReconciler, Lister, ReconcileResult } from '../../common/controller-ports';
import type { Pod } from '../../common/pod';
import { VmiResource } from '../../common/vmi-resource';
import { NotFoundError } from '../../runtime/errors';
import { NodeType } from '../../runtime/resources';
import type { KubeObject } from '../../runtime/types';

/** upstream's reason on the Events and the failed VMIs. */
export const NODE_UNRESPONSIVE_REASON = 'NodeUnresponsive';
/** upstream's heartbeat timeout. */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 5 * 60_000;
/** upstream's recheck period of a node (while it exists). */
export const DEFAULT_RECHECK_MS = 60_000;

const HEARTBEAT = 'kubevirt.io/heartbeat';
const SCHEDULABLE = 'kubevirt.io/schedulable';

/** A Node as this controller reads it. */
export type NodeObject = KubeObject & {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
};

/** Options of {@link NodeController}. */
export interface NodeControllerOptions extends ControllerDeps {
  nodes: Lister<NodeObject>;
  /** The active (not Succeeded/Failed) VMIs whose status.nodeName is `node`. */
  vmisOnNode(node: string): VirtualMachineInstance[];
  /** The launcher pods bound to `node`. */
  podsOnNode(node: string): Pod[];
  /** Default {@link DEFAULT_HEARTBEAT_TIMEOUT_MS}. */
  heartbeatTimeoutMs?: number;
  /** Default {@link DEFAULT_RECHECK_MS}, shortened to the timeout when that is shorter. */
  recheckMs?: number;
  onWrite?: (kind: string, verb: 'update') => void;
}

/** Whether a node is unresponsive at `now` (upstream's isNodeUnresponsive). */
export function nodeUnresponsive(node: NodeObject | undefined, now: Date, timeoutMs: number): boolean {
  if (!node) return true;
  const beat = node.metadata.annotations?.[HEARTBEAT];
  if (!beat) return false;
  const at = Date.parse(beat);
  // An unreadable stamp: upstream logs it and leaves the node alone.
  if (Number.isNaN(at)) return false;
  return at < now.getTime() - timeoutMs;
}

/**
 * Whether `pod` still counts as running (upstream's alivePodsOnNode): not Failed or
 * Succeeded and not every container terminated.
 */
export function podAlive(pod: Pod): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return false;
  const statuses = pod.status?.containerStatuses ?? [];
  return !(statuses.length > 0 && statuses.every((s) => s.state?.terminated));
}

const ownerVmiUid = (pod: Pod): string | undefined =>
  pod.metadata?.ownerReferences?.find((r) => r.controller && r.kind === 'VirtualMachineInstance')?.uid;

/** Reconciles one Node by name. */
export class NodeController implements KeyReconciler {
  private readonly timeoutMs: number;
  private readonly recheckMs: number;

  constructor(private readonly o: NodeControllerOptions) {
    this.timeoutMs = o.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS;
    this.recheckMs = Math.min(o.recheckMs ?? DEFAULT_RECHECK_MS, this.timeoutMs);
  }

  private now(): Date {
    return this.o.now?.() ?? new Date();
  }

  async reconcile(name: string): Promise<ReconcileResult | undefined> {
    const node = this.o.nodes.get(name);
    const now = this.now();
    if (!nodeUnresponsive(node, now, this.timeoutMs)) {
      // Look again when the last heartbeat would expire (upstream polls every minute).
      const beat = Date.parse(node?.metadata.annotations?.[HEARTBEAT] ?? '');
      if (!node || Number.isNaN(beat)) return node ? { requeueAfterMs: this.recheckMs } : undefined;
      const due = beat + this.timeoutMs - now.getTime() + 1_000;
      return { requeueAfterMs: Math.max(1_000, Math.min(due, this.recheckMs)) };
    }
    if (node && node.metadata.labels?.[SCHEDULABLE] === 'true') await this.markUnschedulable(node);
    const alive = new Set(
      this.o
        .podsOnNode(name)
        .filter(podAlive)
        .map(ownerVmiUid)
        .filter((u): u is string => !!u),
    );
    const errors: string[] = [];
    for (const vmi of this.o.vmisOnNode(name)) {
      if (alive.has(vmi.metadata?.uid ?? '')) continue;
      try {
        await this.fail(vmi, name);
      } catch (e) {
        errors.push(`${vmi.metadata?.namespace}/${vmi.metadata?.name}: ${(e as Error).message}`);
      }
    }
    if (errors.length) throw new Error(`failing VMIs of unresponsive node ${name}: ${errors.join('; ')}`);
    return node ? { requeueAfterMs: this.recheckMs } : undefined;
  }

  private async markUnschedulable(node: NodeObject): Promise<void> {
    this.o.recorder.event(
      { apiVersion: 'v1', kind: 'Node', metadata: { name: node.metadata.name, uid: node.metadata.uid } },
      'Normal',
      NODE_UNRESPONSIVE_REASON,
      'virt-handler is not responsive, marking node as unresponsive',
    );
    await this.o.client.patch(
      NodeType,
      node.metadata.name,
      { metadata: { labels: { [SCHEDULABLE]: 'false' } } },
      { type: 'merge' },
    );
    this.o.onWrite?.('Node', 'update');
  }

  private async fail(vmi: VirtualMachineInstance, node: string): Promise<void> {
    this.o.recorder.event(
      vmi,
      'Normal',
      NODE_UNRESPONSIVE_REASON,
      `virt-handler on node ${node} is not responsive, marking VMI as failed`,
    );
    try {
      // The test pins the VMI still being on this node and active: a concurrent write
      // (the VMI moved on, or finished) makes the patch fail instead of overwriting it.
      await this.o.client.patch(
        VmiResource,
        vmi.metadata?.name ?? '',
        [
          { op: 'test', path: '/status/nodeName', value: node },
          { op: 'replace', path: '/status/phase', value: 'Failed' },
          { op: 'add', path: '/status/reason', value: NODE_UNRESPONSIVE_REASON },
        ],
        { type: 'json', namespace: vmi.metadata?.namespace },
      );
    } catch (e) {
      if (e instanceof NotFoundError) return;
      throw e;
    }
    this.o.onWrite?.('VirtualMachineInstance', 'update');
  }
}
