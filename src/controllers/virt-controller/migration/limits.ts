/**
 * The migration limits of the KubeVirt CR (`spec.configuration.migrations`), as upstream's
 * migration controller applies them before it creates a target pod
 * (handleTargetPodCreation): at most `parallelMigrationsPerCluster` (default 5) migrations
 * running in the cluster and `parallelOutboundMigrationsPerNode` (default 2) leaving one
 * node. A migration counts as running from the moment its target pod exists (or its
 * phase is past Pending) until it is final; a node's outbound ones are those whose VMI is
 * on the node or whose migration state names it as the source.
 *
 * Upstream then retries the waiting migrations through a priority queue
 * (system-critical, user-triggered, system-maintenance, default); here the order is made
 * explicit: a waiting migration takes a free slot only if no waiting migration ahead of it
 * (higher priority, else created earlier, else by name) could take it, so they start in
 * that order. Pure.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import { isMigrationFinal, MigrationPhase } from './phases';

/** upstream's queue priorities (pkg/util/migrations). */
export const MigrationPriority = {
  'system-critical': 100,
  'user-triggered': 50,
  'system-maintenance': 20,
} as const;

/** A migration's queue priority from `spec.priority` (0 when unset or unknown). */
export function migrationPriority(m: VirtualMachineInstanceMigration): number {
  return MigrationPriority[m.spec.priority as keyof typeof MigrationPriority] ?? 0;
}

/** upstream's getRequeueDelayForPriority: how soon a waiting migration looks again. */
export function requeueDelayMs(m: VirtualMachineInstanceMigration): number {
  const p = migrationPriority(m);
  if (p >= MigrationPriority['system-critical']) return 1_000;
  if (p >= MigrationPriority['user-triggered']) return 3_000;
  return 5_000;
}

/** What the limits look at. */
export interface MigrationLimitInput {
  /** The migration about to create its target pod. */
  migration: VirtualMachineInstanceMigration;
  vmi: VirtualMachineInstance;
  /** Every migration in the cluster (final ones are skipped). */
  migrations: readonly VirtualMachineInstanceMigration[];
  /** The VMI a migration is for. */
  vmiOf(m: VirtualMachineInstanceMigration): VirtualMachineInstance | undefined;
  /** Whether a migration's target pod exists. */
  hasTargetPod(m: VirtualMachineInstanceMigration, vmi: VirtualMachineInstance): boolean;
  perCluster: number;
  perNode: number;
}

const uidOf = (m: VirtualMachineInstanceMigration) => m.metadata?.uid ?? '';

/** upstream's IsRunning: past Pending and not final. */
const pastPending = (m: VirtualMachineInstanceMigration) => {
  const p = m.status?.phase ?? '';
  return p !== MigrationPhase.Unset && p !== MigrationPhase.Pending && !isMigrationFinal(p);
};

/** Whether `a` is ahead of `b` in the queue. */
function ahead(a: VirtualMachineInstanceMigration, b: VirtualMachineInstanceMigration): boolean {
  const pa = migrationPriority(a);
  const pb = migrationPriority(b);
  if (pa !== pb) return pa > pb;
  const ta = a.metadata?.creationTimestamp ?? '';
  const tb = b.metadata?.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb;
  return `${a.metadata?.namespace}/${a.metadata?.name}` < `${b.metadata?.namespace}/${b.metadata?.name}`;
}

const sourceNodeOf = (vmi: VirtualMachineInstance) => vmi.status?.nodeName ?? '';
const leaves = (vmi: VirtualMachineInstance, node: string) =>
  vmi.status?.nodeName === node || vmi.status?.migrationState?.sourceNode === node;

/**
 * Why the migration must wait before creating its target pod (upstream's log line, plus
 * the queue position when others wait ahead of it), or undefined when it may go.
 */
export function migrationLimitWait(i: MigrationLimitInput): string | undefined {
  const { migration, vmi } = i;
  const who = `vmi [${vmi.metadata?.namespace}/${vmi.metadata?.name}]`;
  const node = sourceNodeOf(vmi);
  const running: VirtualMachineInstanceMigration[] = [];
  const candidates: [VirtualMachineInstanceMigration, VirtualMachineInstance][] = [];
  for (const m of i.migrations) {
    if (uidOf(m) === uidOf(migration) || isMigrationFinal(m.status?.phase) || m.metadata?.deletionTimestamp)
      continue;
    const v = i.vmiOf(m);
    if (!v) continue;
    if (pastPending(m) || i.hasTargetPod(m, v)) running.push(m);
    else if (v.status?.phase === 'Running' && ahead(m, migration) && startable(m, v)) candidates.push([m, v]);
  }
  const outboundFrom = (n: string) => running.filter((m) => leaves(i.vmiOf(m)!, n)).length;
  const outbound = outboundFrom(node);
  if (running.length >= i.perCluster)
    return `Waiting to schedule target pod for ${who} migration because total running parallel migration count [${running.length}] is currently at the global cluster limit.`;
  if (outbound >= i.perNode)
    return `Waiting to schedule target pod for ${who} migration because total running parallel outbound migrations on source node ${node} [${outbound}] has hit outbound migrations per node limit.`;
  // Those ahead that could start now: their own source node has a free slot.
  const waiting = candidates.filter(([, v]) => outboundFrom(sourceNodeOf(v)) < i.perNode).map(([m]) => m);
  const clusterAhead = waiting.length;
  if (clusterAhead >= i.perCluster - running.length)
    return `Waiting to schedule target pod for ${who} migration: ${clusterAhead} waiting migration(s) ahead of it take the ${i.perCluster - running.length} free slot(s) of the cluster limit.`;
  const nodeAhead = waiting.filter((m) => leaves(i.vmiOf(m)!, node)).length;
  if (nodeAhead >= i.perNode - outbound)
    return `Waiting to schedule target pod for ${who} migration: ${nodeAhead} waiting migration(s) from source node ${node} ahead of it take the ${i.perNode - outbound} free slot(s) of the per-node limit.`;
  return undefined;
}

/**
 * A waiting migration that could take a slot now: its VMI is live-migratable (not
 * False) and has no other migration in flight (those fail or wait for other reasons).
 */
function startable(m: VirtualMachineInstanceMigration, v: VirtualMachineInstance): boolean {
  if ((v.status?.conditions ?? []).some((c) => c.type === 'LiveMigratable' && c.status === 'False'))
    return false;
  const st = v.status?.migrationState;
  return !(st && !st.completed && st.migrationUid && st.migrationUid !== uidOf(m));
}
