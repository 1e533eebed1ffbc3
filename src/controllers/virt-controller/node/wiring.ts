/**
 * Wires the per-Node controllers into virt-controller: the node controller (heartbeats)
 * and the evacuation controller (drain). A Node informer (their own kind, queued by the
 * Manager), VMIs and launcher pods indexed by node, and their changes queueing their node:
 * a pod deleted on an unresponsive node fails its VMI at once, a VMI marked for evacuation
 * gets its migration at once.
 */

import type { ClusterConfig } from '../../../api/config/cluster-config';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type { EventRecorder, KeyReconciler } from '../../common/controller-ports';
import { lister } from '../../common/controller-wiring';
import type { Pod } from '../../common/pod';
import type { Controller } from '../../runtime/controller';
import { Expectations } from '../../runtime/expectations';
import type { Informer, SharedInformerFactory } from '../../runtime/informer';
import { NodeType } from '../../runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../runtime/types';
import { EVACUATION_ANNOTATION, EvacuationController } from '../evacuation/controller';
import type { VirtControllerOptions } from '../virt-controller-options';
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
  migrationInformer: Informer<KubeObject>;
  register(name: string, forType: ResourceType, r: KeyReconciler): Controller;
  config: () => ClusterConfig;
  onWrite?: (kind: string, verb: 'update' | 'create') => void;
}

/** Registers the per-Node controllers `o` asks for. */
export function wireNodeControllers(
  w: NodeWiring,
  o: Pick<VirtControllerOptions, 'nodeHeartbeatTimeoutMs' | 'evacuation'>,
): void {
  if (o.nodeHeartbeatTimeoutMs === undefined && !o.evacuation) return;
  w.vmiInformer.indexer.addIndex(NODE_INDEX, (v) => {
    const n = (v as VirtualMachineInstance).status?.nodeName;
    return n ? [n] : [];
  });
  w.podInformer.indexer.addIndex(NODE_INDEX, (p) => {
    const n = (p as Pod).spec?.nodeName;
    return n ? [n] : [];
  });
  const nodes = w.informers.informerFor(NodeType);
  const loops: Controller[] = [];
  if (o.nodeHeartbeatTimeoutMs !== undefined) loops.push(nodeLoop(w, nodes, o.nodeHeartbeatTimeoutMs));
  if (o.evacuation) loops.push(evacuationLoop(w, nodes));
  const queueNode = (name: string | undefined) => {
    if (name) for (const l of loops) l.queue.add(name);
  };
  w.vmiInformer.addEventHandler({
    onAdd: (v) => queueNode((v as VirtualMachineInstance).status?.nodeName),
    onUpdate: (_a, v) => queueNode((v as VirtualMachineInstance).status?.nodeName),
  });
  // A pod's change also concerns its VMI's node: a migration source pod completing there
  // leaves the VMI one active pod, which evacuation waits for.
  const podChanged = (p: Pod) => {
    queueNode(p.spec?.nodeName);
    const owner = p.metadata?.ownerReferences?.find((o) => o.kind === 'VirtualMachineInstance');
    const vmi = owner
      ? (w.vmiInformer.indexer.get(`${p.metadata?.namespace}/${owner.name}`) as
          | VirtualMachineInstance
          | undefined)
      : undefined;
    if (vmi?.status?.nodeName !== p.spec?.nodeName) queueNode(vmi?.status?.nodeName);
  };
  w.podInformer.addEventHandler({
    onUpdate: (_a, p) => podChanged(p as Pod),
    onDelete: (p) => podChanged(p as Pod),
  });
}

const vmisOn = (w: NodeWiring, n: string) =>
  w.vmiInformer.indexer.byIndex(NODE_INDEX, n) as VirtualMachineInstance[];

function nodeLoop(w: NodeWiring, nodes: Informer<KubeObject>, heartbeatTimeoutMs: number): Controller {
  return w.register(
    'node',
    NodeType,
    new NodeController({
      client: w.client,
      recorder: w.recorder,
      nodes: lister<NodeObject>(nodes),
      vmisOnNode: (n) => vmisOn(w, n).filter((v) => !FINAL.has(v.status?.phase ?? '')),
      podsOnNode: (n) => w.podInformer.indexer.byIndex(NODE_INDEX, n) as Pod[],
      heartbeatTimeoutMs,
      onWrite: w.onWrite,
    }),
  );
}

function evacuationLoop(w: NodeWiring, nodes: Informer<KubeObject>): Controller {
  const expectations = new Expectations();
  const unfinished = () =>
    (w.migrationInformer.indexer.list() as VirtualMachineInstanceMigration[]).filter(
      (m) => !FINAL.has(m.status?.phase ?? ''),
    );
  const loop = w.register(
    'evacuation',
    NodeType,
    new EvacuationController({
      client: w.client,
      recorder: w.recorder,
      nodes: lister(nodes),
      vmisOnNode: (n) => vmisOn(w, n),
      unfinishedMigrations: unfinished,
      activePods: (vmi) =>
        (w.podInformer.indexer.list() as Pod[]).filter(
          (p) =>
            p.metadata?.labels?.['kubevirt.io/created-by'] === vmi.metadata?.uid &&
            !FINAL.has(p.status?.phase ?? ''),
        ).length,
      config: () => {
        const c = w.config();
        return { evictionStrategy: c.evictionStrategy, nodeDrainTaintKey: c.migrations.nodeDrainTaintKey };
      },
      expectations,
      onWrite: w.onWrite,
    }),
  );
  // Its migrations appearing (or finishing): the node looks again.
  const onMigration = (m: KubeObject, created: boolean) => {
    const node = m.metadata?.annotations?.[EVACUATION_ANNOTATION];
    if (!node) return;
    if (created) expectations.creationObserved(node);
    loop.queue.add(node);
  };
  w.migrationInformer.addEventHandler({
    onAdd: (m) => onMigration(m, true),
    onUpdate: (_a, m) => onMigration(m, false),
    onDelete: (m) => onMigration(m, false),
  });
  return loop;
}
