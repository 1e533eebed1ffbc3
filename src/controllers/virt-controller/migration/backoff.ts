/**
 * upstream's handleMigrationBackoff (pkg/virt-controller/watch/migration): a migration the
 * evacuation controller (or the workload updater) made for a VMI whose earlier such
 * migrations failed waits before it creates its target pod: 20 s after the last failure,
 * doubled for each earlier failure since the last success. Only the VMI's newest such
 * migration waits; user-made migrations never do. Pure.
 */
import type { VirtualMachineInstanceMigration } from '../../../api/generated/types';
import { EVACUATION_ANNOTATION } from '../evacuation/controller';
import { MigrationPhase } from './phases';

/** upstream's annotation on the workload updater's migrations. */
export const WORKLOAD_UPDATE_MIGRATION_ANNOTATION = 'kubevirt.io/workloadUpdateMigration';

const FIRST_BACKOFF_MS = 20_000;

const eligible = (m: VirtualMachineInstanceMigration) => {
  const a = m.metadata?.annotations ?? {};
  return EVACUATION_ANNOTATION in a || WORKLOAD_UPDATE_MIGRATION_ANNOTATION in a;
};

const failedAt = (m: VirtualMachineInstanceMigration) =>
  Date.parse(
    m.status?.phaseTransitionTimestamps?.find((t) => t.phase === MigrationPhase.Failed)
      ?.phaseTransitionTimestamp ?? '',
  );

/**
 * How many ms `migration` still waits, given every migration of its VMI (`sameVmi`,
 * itself included); 0 when it may go now.
 */
export function migrationBackoffMs(
  migration: VirtualMachineInstanceMigration,
  sameVmi: VirtualMachineInstanceMigration[],
  now: Date,
): number {
  if (!eligible(migration)) return 0;
  // Newest first (upstream's vmimCollection order: creation time, then name).
  const list = sameVmi
    .filter(eligible)
    .sort(
      (a, b) =>
        String(b.metadata?.creationTimestamp ?? '').localeCompare(
          String(a.metadata?.creationTimestamp ?? ''),
        ) || String(b.metadata?.name ?? '').localeCompare(String(a.metadata?.name ?? '')),
    );
  if (list.length < 2 || list[0].metadata?.uid !== migration.metadata?.uid) return 0;
  let backoff = 0;
  for (const m of list.slice(1)) {
    if (m.status?.phase === MigrationPhase.Succeeded) break;
    if (m.metadata?.deletionTimestamp) continue;
    if (m.status?.phase === MigrationPhase.Failed) backoff = backoff === 0 ? FIRST_BACKOFF_MS : backoff * 2;
  }
  if (backoff === 0) return 0;
  const since = failedAt(list[1]);
  const until = (Number.isNaN(since) ? 0 : since) + backoff;
  return Math.max(0, until - now.getTime());
}
