/**
 * The workload updater's upgrade part (upstream's WorkloadUpdateController.sync in
 * pkg/virt-controller/watch/workload-updater), reconciled per KubeVirt CR: once the CR is
 * Deployed at its target version, every running VMI whose launcher pod runs another image
 * than the one virt-controller installs (`status.launcherContainerImageVersion`, set by the
 * VMI controller) is outdated. The CR's `status.outdatedVirtualMachineInstanceWorkloads`
 * says how many. With `workloadUpdateMethods` LiveMigrate, migratable outdated VMIs get a
 * `kubevirt-workload-update-*` migration (priority system-critical), as many at a time as
 * `parallelMigrationsPerCluster` leaves room for; with Evict, the others' launcher pods are
 * evicted, `batchEvictionSize` per `batchEvictionInterval`. Hotplug's migrations stay with
 * the per-VMI reconciler (./controller.ts).
 *
 * Deviation from upstream: candidates are taken in name order, not shuffled (the same
 * outcome, and a test can say which goes first).
 */
import { workloadUpdateSettings } from '../../../api/config/workload-update-strategy';
import type {
  KubeVirt,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../api/generated/types';
import type {
  ControllerDeps,
  Expectations,
  KeyReconciler,
  Lister,
  ReconcileResult,
} from '../../common/controller-ports';
import type { Pod } from '../../common/pod';
import { isMigrating } from '../../common/vmi-migrating';
import { NotFoundError } from '../../runtime/errors';
import { KubeVirtType } from '../../runtime/resources';
import { createSystemMigration } from '../migration/create-migration';
import { WORKLOAD_UPDATE_ANNOTATION } from './controller';

/** How soon the CR is looked at again while outdated VMIs wait (upstream's throttle interval). */
export const OUTDATED_RECHECK_MS = 5_000;

/** Options of {@link OutdatedLauncherUpdater}. */
export interface OutdatedLauncherOptions extends ControllerDeps {
  kubevirts: Lister<KubeVirt>;
  vmis: Lister<VirtualMachineInstance>;
  /** Every migration that is not yet Succeeded or Failed. */
  unfinishedMigrations(): VirtualMachineInstanceMigration[];
  /** The VMI's current launcher pod (on its node, not being deleted), if any. */
  currentPod(vmi: VirtualMachineInstance): Pod | undefined;
  /** Evicts `pod` through the API's eviction subresource (PDBs and virt-api's webhook apply). */
  evict(pod: Pod): Promise<void>;
  /** The launcher image virt-controller installs. */
  launcherImage: string;
  /** `migrations.parallelMigrationsPerCluster` in force (default 5). */
  parallelMigrationsPerCluster(): number;
  expectations: Expectations;
  onWrite?: (kind: string, verb: 'create' | 'patch') => void;
}

const has = (vmi: VirtualMachineInstance, type: string, status: string) =>
  (vmi.status?.conditions ?? []).some((c) => c.type === type && c.status === status);

/** upstream's VirtualMachineInstanceMigration.IsRunning: past Pending, not final. */
const RUNNING_NOT = new Set(['', 'Pending', 'Succeeded', 'Failed']);

/** upstream's isOutdated: a running VMI whose recorded launcher image is not `image`. */
export function isOutdated(vmi: VirtualMachineInstance, image: string): boolean {
  const v = vmi.status?.launcherContainerImageVersion;
  return !!v && v !== image;
}

/** The VMIs of one pass, sorted as upstream's getUpdateData sorts them. */
export interface OutdatedSplit {
  all: VirtualMachineInstance[];
  migrate: VirtualMachineInstance[];
  evict: VirtualMachineInstance[];
}

/** Reconciles the KubeVirt CR (`namespace/name` key). */
export class OutdatedLauncherUpdater implements KeyReconciler {
  private lastEvictionBatch = 0;

  constructor(private readonly o: OutdatedLauncherOptions) {}

  /** upstream's getUpdateData. */
  split(kv: KubeVirt, unfinished: VirtualMachineInstanceMigration[]): OutdatedSplit {
    const s = workloadUpdateSettings(kv.spec?.workloadUpdateStrategy);
    const busy = new Set(unfinished.map((m) => `${m.metadata?.namespace}/${m.spec?.vmiName}`));
    const out: OutdatedSplit = { all: [], migrate: [], evict: [] };
    const vmis = this.o.vmis
      .list()
      .filter(
        (v) =>
          v.status?.phase === 'Running' &&
          !v.metadata?.deletionTimestamp &&
          isOutdated(v, this.o.launcherImage),
      )
      .sort((a, b) =>
        `${a.metadata?.namespace}/${a.metadata?.name}`.localeCompare(
          `${b.metadata?.namespace}/${b.metadata?.name}`,
        ),
      );
    for (const v of vmis) {
      out.all.push(v);
      if (isMigrating(v) || busy.has(`${v.metadata?.namespace}/${v.metadata?.name}`)) continue;
      if (s.liveMigrate && has(v, 'LiveMigratable', 'True')) out.migrate.push(v);
      else if (s.evict) out.evict.push(v);
    }
    return out;
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const kv = this.o.kubevirts.get(key);
    if (!kv) {
      this.o.expectations.delete(key);
      return undefined;
    }
    if (!this.o.expectations.satisfied(key)) return undefined;
    const st = kv.status ?? {};
    // Only an install that finished its rollout: until then another virt-controller (of
    // the old or the new image) may be the one creating launchers.
    if (
      st.phase !== 'Deployed' ||
      st.observedKubeVirtVersion !== st.targetKubeVirtVersion ||
      st.observedKubeVirtRegistry !== st.targetKubeVirtRegistry
    )
      return undefined;
    const unfinished = this.o.unfinishedMigrations();
    const data = this.split(kv, unfinished);
    await this.writeCount(kv, data.all.length);

    const s = workloadUpdateSettings(kv.spec?.workloadUpdateStrategy);
    const active = unfinished.filter((m) => !RUNNING_NOT.has(m.status?.phase ?? '')).length;
    const toMigrate = data.migrate.slice(0, Math.max(0, this.o.parallelMigrationsPerCluster() - active));
    const now = (this.o.now?.() ?? new Date()).getTime();
    let toEvict: VirtualMachineInstance[] = [];
    if (data.evict.length && now >= this.lastEvictionBatch + s.batchEvictionIntervalMs) {
      toEvict = data.evict.slice(0, s.batchEvictionSize);
      this.lastEvictionBatch = now;
    }
    this.o.expectations.expectCreations(key, toMigrate.length);
    const results = await Promise.allSettled([
      ...toMigrate.map((vmi) =>
        createSystemMigration(
          this.o,
          vmi,
          {
            generateName: 'kubevirt-workload-update-',
            annotations: { [WORKLOAD_UPDATE_ANNOTATION]: '' },
            priority: 'system-critical',
            purpose: ' for automated workload update',
          },
          key,
        ),
      ),
      ...toEvict.map((vmi) => this.evict(vmi)),
    ]);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    return data.migrate.length || data.evict.length ? { requeueAfterMs: OUTDATED_RECHECK_MS } : undefined;
  }

  /** upstream's eviction of the VMI's current pod, with its events. */
  private async evict(vmi: VirtualMachineInstance): Promise<void> {
    const pod = this.o.currentPod(vmi);
    try {
      if (!pod) throw new Error('no active launcher pod');
      await this.o.evict(pod);
      this.o.recorder.event(
        vmi,
        'Normal',
        'SuccessfulEvict',
        'Initiated eviction of VMI as part of automated workload update',
      );
    } catch (e) {
      if (e instanceof NotFoundError) return;
      this.o.recorder.event(
        vmi,
        'Warning',
        'FailedEvict',
        `Error evicting VMI during automated workload update: ${(e as Error).message}`,
      );
      throw e;
    }
  }

  /** `status.outdatedVirtualMachineInstanceWorkloads`, patched when it differs (tested as upstream). */
  private async writeCount(kv: KubeVirt, n: number): Promise<void> {
    const old = kv.status?.outdatedVirtualMachineInstanceWorkloads;
    if (old === n) return;
    const path = '/status/outdatedVirtualMachineInstanceWorkloads';
    const ops =
      old === undefined
        ? [{ op: 'add', path, value: n }]
        : [
            { op: 'test', path, value: old },
            { op: 'replace', path, value: n },
          ];
    await this.o.client.patch(KubeVirtType, kv.metadata?.name ?? '', ops, {
      namespace: kv.metadata?.namespace,
      type: 'json',
      subresource: 'status',
    });
    this.o.onWrite?.('KubeVirt', 'patch');
  }
}
