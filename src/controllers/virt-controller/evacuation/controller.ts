/**
 * The evacuation controller (upstream's pkg/virt-controller/watch/drain/evacuation): per
 * Node, the VMIs to move off it are those marked for evacuation from it
 * (`status.evacuationNodeName`, set by virt-api's pods/eviction webhook when `kubectl
 * drain` evicts their launcher pod), or every VMI there when the Node carries the drain
 * taint (`migrations.nodeDrainTaintKey`, default `kubevirt.io/drain`, effect NoSchedule;
 * deprecated upstream). For each such VMI that wants to migrate on eviction (strategy
 * LiveMigrate or LiveMigrateIfPossible, its own or the cluster default), is
 * LiveMigratable=True, is running and not deleted, has no unfinished migration and only
 * one active pod, it creates a VirtualMachineInstanceMigration `kubevirt-evacuation-*`
 * with the annotation `kubevirt.io/evacuationMigration: <node>` and priority
 * system-critical, as upstream. The migration controller's limits queue them.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type {
  ControllerDeps,
  Expectations,
  KeyReconciler,
  Lister,
  ReconcileResult,
} from '../../common/controller-ports';
import type { KubeObject } from '../../runtime/types';
import { createSystemMigration } from '../migration/create-migration';

/** upstream's annotation on evacuation migrations (the source node). */
export const EVACUATION_ANNOTATION = 'kubevirt.io/evacuationMigration';
const DEFAULT_DRAIN_TAINT = 'kubevirt.io/drain';
const FINAL = new Set(['Succeeded', 'Failed']);

type NodeLike = KubeObject & { spec?: { taints?: { key: string; effect: string }[] } };

/** Options of {@link EvacuationController}. */
export interface EvacuationControllerOptions extends ControllerDeps {
  nodes: Lister<NodeLike>;
  /** VMIs whose status.nodeName is `node`. */
  vmisOnNode(node: string): VirtualMachineInstance[];
  /** Migrations not yet Succeeded or Failed. */
  unfinishedMigrations(): VirtualMachineInstanceMigration[];
  /** How many of the VMI's pods are not finished (source and target during a migration). */
  activePods(vmi: VirtualMachineInstance): number;
  /** The cluster's default evictionStrategy and migration configuration. */
  config(): { evictionStrategy?: string; nodeDrainTaintKey?: string };
  expectations: Expectations;
  onWrite?: (kind: string, verb: 'create') => void;
}

/** upstream's VMIMigratableOnEviction: the strategies that move a VMI on eviction. */
export function migratesOnEviction(vmi: VirtualMachineInstance, clusterDefault?: string): boolean {
  const s = vmi.spec?.evictionStrategy ?? clusterDefault;
  return s === 'LiveMigrate' || s === 'LiveMigrateIfPossible';
}

const migratable = (vmi: VirtualMachineInstance) =>
  (vmi.status?.conditions ?? []).some((c) => c.type === 'LiveMigratable' && c.status === 'True');

/** Reconciles one Node by name. */
export class EvacuationController implements KeyReconciler {
  constructor(private readonly o: EvacuationControllerOptions) {}

  /** The VMIs a migration should be created for now. */
  candidates(name: string): VirtualMachineInstance[] {
    const node = this.o.nodes.get(name);
    if (!node) return [];
    const cfg = this.o.config();
    const taint = cfg.nodeDrainTaintKey || DEFAULT_DRAIN_TAINT;
    const tainted = (node.spec?.taints ?? []).some((t) => t.key === taint && t.effect === 'NoSchedule');
    const onNode = this.o.vmisOnNode(name);
    const wanted = tainted
      ? onNode
      : onNode.filter(
          (v) => v.status?.evacuationNodeName && v.status.evacuationNodeName === v.status.nodeName,
        );
    const migrating = new Set(
      this.o.unfinishedMigrations().map((m) => `${m.metadata?.namespace}/${m.spec?.vmiName}`),
    );
    return wanted.filter(
      (v) =>
        !FINAL.has(v.status?.phase ?? '') &&
        !v.metadata?.deletionTimestamp &&
        migratesOnEviction(v, cfg.evictionStrategy) &&
        migratable(v) &&
        !migrating.has(`${v.metadata?.namespace}/${v.metadata?.name}`) &&
        this.o.activePods(v) <= 1,
    );
  }

  async reconcile(name: string): Promise<ReconcileResult | undefined> {
    if (!this.o.nodes.get(name)) {
      this.o.expectations.delete(name);
      return undefined;
    }
    if (!this.o.expectations.satisfied(name)) return undefined;
    const vmis = this.candidates(name);
    if (vmis.length === 0) return undefined;
    this.o.expectations.expectCreations(name, vmis.length);
    const errors: string[] = [];
    for (const vmi of vmis) {
      await createSystemMigration(
        this.o,
        vmi,
        {
          generateName: 'kubevirt-evacuation-',
          annotations: { [EVACUATION_ANNOTATION]: name },
          priority: 'system-critical',
        },
        name,
      ).catch((e) =>
        errors.push(`${vmi.metadata?.namespace}/${vmi.metadata?.name}: ${(e as Error).message}`),
      );
    }
    if (errors.length) throw new Error(`evacuating node ${name}: ${errors.join('; ')}`);
    return undefined;
  }
}
