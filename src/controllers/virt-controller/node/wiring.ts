/**
 * Wires the node controller into virt-controller: a Node informer (its own kind, queued
 * by the Manager), VMIs and launcher pods indexed by node, and their changes queueing
 * their node, so a pod deleted on an unresponsive node fails its VMI at once.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import type { Pod } from '../../common/pod';
import type { Controller } from '../../runtime/controller';
import type { Informer, SharedInformerFactory } from '../../runtime/informer';
import { NodeType } from '../../runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../runtime/types';
import type { EventRecorder, KeyReconciler } from '../services/ports';
import { lister } from '../wiring';
import { NodeController, type NodeObject } from './controller';

const NODE_INDEX = 'nodeName';
const FINAL = new Set(['Succeeded', 'Failed']);

/** What {@link wireNodeController} needs from virt-controller. */
export interface NodeWiring {
  client: ObjectClient;
  recorder: EventRecorder;
  informers: SharedInformerFactory;
  vmiInformer: Informer<KubeObject>;
  podInformer: Informer<KubeObject>;
  register(name: string, forType: ResourceType, r: KeyReconciler): Controller;
  heartbeatTimeoutMs: number;
  onWrite?: (kind: string, verb: 'update') => void;
}

/** Registers the node controller; returns its loop. */
export function wireNodeController(w: NodeWiring): Controller {
  w.vmiInformer.indexer.addIndex(NODE_INDEX, (v) => {
    const n = (v as VirtualMachineInstance).status?.nodeName;
    return n ? [n] : [];
  });
  w.podInformer.indexer.addIndex(NODE_INDEX, (p) => {
    const n = (p as Pod).spec?.nodeName;
    return n ? [n] : [];
  });
  const nodes = w.informers.informerFor(NodeType);
  const loop = w.register(
    'node',
    NodeType,
    new NodeController({
      client: w.client,
      recorder: w.recorder,
      nodes: lister<NodeObject>(nodes),
      vmisOnNode: (n) =>
        (w.vmiInformer.indexer.byIndex(NODE_INDEX, n) as VirtualMachineInstance[]).filter(
          (v) => !FINAL.has(v.status?.phase ?? ''),
        ),
      podsOnNode: (n) => w.podInformer.indexer.byIndex(NODE_INDEX, n) as Pod[],
      heartbeatTimeoutMs: w.heartbeatTimeoutMs,
      onWrite: w.onWrite,
    }),
  );
  const queueNode = (name: string | undefined) => {
    if (name) loop.queue.add(name);
  };
  w.vmiInformer.addEventHandler({
    onAdd: (v) => queueNode((v as VirtualMachineInstance).status?.nodeName),
    onUpdate: (_a, v) => queueNode((v as VirtualMachineInstance).status?.nodeName),
  });
  w.podInformer.addEventHandler({
    onUpdate: (_a, p) => queueNode((p as Pod).spec?.nodeName),
    onDelete: (p) => queueNode((p as Pod).spec?.nodeName),
  });
  return loop;
}
