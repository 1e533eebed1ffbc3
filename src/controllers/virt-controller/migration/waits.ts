/**
 * Why a migration waits before it creates its target pod: upstream's backoff after failed
 * evacuation migrations (./backoff.ts), then the cluster's migration limits (./limits.ts).
 * Each reason is recorded as an Event once, when it starts or changes.
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type { ControllerDeps, Lister, PodsByVmi } from '../../common/controller-ports';
import { MigrationLabels } from '../../common/migration-labels';
import type { Pod } from '../../common/pod';
import { migrationBackoffMs } from './backoff';
import { MigrationEventReason } from './events';
import { migrationLimitWait } from './limits';

/** What the waits read. */
export interface MigrationWaitsDeps extends ControllerDeps {
  migrations: Lister<VirtualMachineInstanceMigration>;
  vmis: Lister<VirtualMachineInstance>;
  pods: PodsByVmi<Pod>;
  config: () => ClusterConfig;
}

/** The last wait reason recorded per migration uid (one Event per change, not per retry). */
export class MigrationWaits {
  private readonly last = new Map<string, string>();

  constructor(private readonly d: MigrationWaitsDeps) {}

  /** The migration no longer waits (it started or ended). */
  forget(m: VirtualMachineInstanceMigration): void {
    this.last.delete(m.metadata?.uid ?? '');
  }

  private changed(m: VirtualMachineInstanceMigration, why: string): boolean {
    const uid = m.metadata?.uid ?? '';
    if (this.last.get(uid) === why) return false;
    this.last.set(uid, why);
    return true;
  }

  /**
   * upstream's handleMigrationBackoff: ms this evacuation migration still waits after
   * earlier ones of its VMI failed, with upstream's `MigrationBackoff` Warning on the VMI.
   */
  backoffMs(m: VirtualMachineInstanceMigration, vmi: VirtualMachineInstance): number {
    const sameVmi = this.d.migrations
      .list()
      .filter((x) => x.metadata?.namespace === m.metadata?.namespace && x.spec.vmiName === m.spec.vmiName);
    const ms = migrationBackoffMs(m, sameVmi, this.d.now?.() ?? new Date());
    if (ms > 0 && this.changed(m, 'backoff')) {
      this.d.recorder.event(
        vmi,
        'Warning',
        MigrationEventReason.MigrationBackoff,
        `backoff migrating vmi ${vmi.metadata?.namespace}/${vmi.metadata?.name}`,
      );
    }
    return ms;
  }

  /**
   * Why the migration waits under the cluster's migration limits, recorded as an Event on
   * the migration when it changes; undefined when it may start.
   */
  limitWait(m: VirtualMachineInstanceMigration, vmi: VirtualMachineInstance): string | undefined {
    const cfg = this.d.config().migrations;
    const wait = migrationLimitWait({
      migration: m,
      vmi,
      migrations: this.d.migrations.list(),
      vmiOf: (x) => this.d.vmis.get(`${x.metadata?.namespace}/${x.spec.vmiName}`),
      hasTargetPod: (x, v) =>
        this.d.pods
          .byVmiUid(v.metadata?.uid ?? '')
          .some((p) => p.metadata?.labels?.[MigrationLabels.jobUid] === x.metadata?.uid),
      perCluster: cfg.parallelMigrationsPerCluster ?? 5,
      perNode: cfg.parallelOutboundMigrationsPerNode ?? 2,
    });
    if (wait && this.changed(m, wait)) {
      this.d.recorder.event(m, 'Normal', MigrationEventReason.WaitingForMigrationSlot, wait);
    }
    return wait;
  }
}
