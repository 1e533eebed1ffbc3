/**
 * The workload updater's live-update part (upstream's
 * pkg/virt-controller/watch/workload-updater): a running VMI with a pending CPU hotplug
 * (HotVCPUChange), memory hotplug (HotMemoryChange True) or a launcher pod that cannot
 * carry its NICs (MigrationRequired True) is moved by a
 * VirtualMachineInstanceMigration `kubevirt-workload-update-*` with upstream's
 * `kubevirt.io/workloadUpdateMigration` annotation and priority user-triggered; its target
 * launcher pod is rendered from the VMI's new spec, so it is sized for the new resources.
 * Only LiveMigratable VMIs with no unfinished migration are moved (the VM controller
 * keeps RestartRequired for the others).
 *
 * Deviations from upstream: reconciled per VMI (upstream's one loop per KubeVirt CR also
 * moves VMIs whose launcher image is outdated: here ./outdated.ts), and, as upstream's,
 * not gated on `workloadUpdateStrategy.workloadUpdateMethods`.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type {
  ControllerDeps,
  Expectations,
  KeyReconciler,
  Lister,
  ReconcileResult,
} from '../../common/controller-ports';
import {
  HOT_MEMORY_CHANGE,
  HOT_VCPU_CHANGE,
  MIGRATION_REQUIRED,
  migratedForHotplug,
} from '../../common/hotplug-migration';
import { isMigrating } from '../../common/vmi-migrating';
import { createSystemMigration } from '../migration/create-migration';

/** upstream's annotation on the migrations the workload updater creates. */
export const WORKLOAD_UPDATE_ANNOTATION = 'kubevirt.io/workloadUpdateMigration';

/** Options of {@link WorkloadUpdateController}. */
export interface WorkloadUpdateOptions extends ControllerDeps {
  vmis: Lister<VirtualMachineInstance>;
  /** The VMI's migrations that are not yet Succeeded or Failed. */
  unfinishedMigrations(namespace: string, vmiName: string): VirtualMachineInstanceMigration[];
  expectations: Expectations;
  onWrite?: (kind: string, verb: 'create') => void;
}

const has = (vmi: VirtualMachineInstance, type: string, status?: string) =>
  (vmi.status?.conditions ?? []).some(
    (c) => c.type === type && (status === undefined || c.status === status),
  );

/**
 * upstream's isHotplugInProgress, less the hotplugs whose migration already brought the
 * VMI to its new pod (its handler applies them there; another migration would not help).
 */
export const hotplugInProgress = (vmi: VirtualMachineInstance) =>
  (has(vmi, HOT_VCPU_CHANGE) && !migratedForHotplug(vmi, HOT_VCPU_CHANGE)) ||
  (has(vmi, HOT_MEMORY_CHANGE, 'True') && !migratedForHotplug(vmi, HOT_MEMORY_CHANGE)) ||
  // A NIC hotplug or unplug the launcher pod cannot carry (../vmi/network-migration; the
  // VMI controller drops the condition when a migration starts).
  has(vmi, MIGRATION_REQUIRED, 'True');

/** Reconciles one VMI (`namespace/name` key). */
export class WorkloadUpdateController implements KeyReconciler {
  constructor(private readonly o: WorkloadUpdateOptions) {}

  /** Whether `vmi` should get a workload-update migration now. */
  wantsMigration(vmi: VirtualMachineInstance): boolean {
    const ns = vmi.metadata?.namespace ?? '';
    return (
      vmi.status?.phase === 'Running' &&
      !vmi.metadata?.deletionTimestamp &&
      hotplugInProgress(vmi) &&
      has(vmi, 'LiveMigratable', 'True') &&
      !isMigrating(vmi) &&
      this.o.unfinishedMigrations(ns, vmi.metadata?.name ?? '').length === 0
    );
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const vmi = this.o.vmis.get(key);
    if (!vmi) {
      this.o.expectations.delete(key);
      return undefined;
    }
    if (!this.o.expectations.satisfied(key) || !this.wantsMigration(vmi)) return undefined;
    this.o.expectations.expectCreations(key, 1);
    await createSystemMigration(
      this.o,
      vmi,
      {
        generateName: 'kubevirt-workload-update-',
        annotations: { [WORKLOAD_UPDATE_ANNOTATION]: '' },
        priority: 'user-triggered',
        purpose: ' for automated workload update',
      },
      key,
    );
    return undefined;
  }
}
