/**
 * The VM controller (upstream pkg/virt-controller/watch/vm): keeps a VirtualMachine's
 * VMI in the state its runStrategy and state change requests ask for, creating it from
 * the template (instance type and preference expanded, defaulted, validated) and owned by
 * the VM, deleting it to stop, backing off crash loops, and mirroring the VMI into the
 * VM's status (printableStatus, conditions, created, ready, generations).
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import type { DataVolume } from '../../../api/generated/cdi/types';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineStatus,
} from '../../../api/generated/types';
import type { InstancetypeCatalog, InstancetypeObjectCatalog } from '../../../api/instancetype/catalog';
import type { ControllerRevision } from '../../../api/instancetype/revision';
import type {
  ControllerDeps,
  Expectations,
  KeyReconciler,
  Lister,
  ReconcileResult,
} from '../../common/controller-ports';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, NotFoundError } from '../../runtime/errors';
import { VirtualMachineType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import type { Claim } from '../services/volumes';
import { handleDataVolumes } from './datavolumes';
import { InstancetypeRevisions } from './instancetype-revisions';
import { LiveUpdateError, LiveUpdates } from './live-update';
import { handleMemoryDumpRequest, nextMemoryDumpRequest, vmiSpecForStart } from './memory-dump';
import { decideRunStrategy, effectiveRunStrategy, RunStrategyError } from './run-strategy';
import { backoffSecondsLeft } from './start-backoff';
import type { SyncFailure } from './vm-conditions';
import { addVmFinalizer, orphaning, releaseVmi, removeVmFinalizer } from './vm-finalizers';
import { computeVmStatus, vmiState } from './vm-status';
import { vmiFromTemplate } from './vmi-template';

/** Event reasons of the VM controller (upstream values). */
export const VmEventReason = {
  SuccessfulCreate: 'SuccessfulCreate',
  FailedCreate: 'FailedCreate',
  SuccessfulDelete: 'SuccessfulDelete',
  FailedDelete: 'FailedDelete',
} as const;

export { VM_GENERATION_ANNOTATION } from './vmi-template';

export interface VmControllerDeps extends ControllerDeps {
  vms: Lister<VirtualMachine>;
  vmis: Lister<VirtualMachineInstance>;
  expectations: Expectations;
  config: () => ClusterConfig;
  /** Instance types and preferences to expand VMs with; none means VMs must not reference any. */
  catalog?: () => InstancetypeObjectCatalog;
  /** Cached ControllerRevisions, where the VMs' instance type and preference copies are read first. */
  revisions?: Lister<ControllerRevision>;
  /** PersistentVolumeClaims, when watched: unbound claims show as WaitingForVolumeBinding. */
  claims?: Lister<Claim>;
  /**
   * DataVolumes, when watched: dataVolumeTemplates become DataVolumes owned by the VM, the
   * VM waits for them, and printableStatus shows Provisioning / DataVolumeError.
   */
  dataVolumes?: Lister<DataVolume>;
  onWrite?: (
    kind: 'VirtualMachineInstance' | 'VirtualMachine',
    verb: 'create' | 'update' | 'patch' | 'delete',
  ) => void;
}

/** A failure of the last sync, surfaced as the VM's Failure condition. */
type SyncError = SyncFailure;

function ownedBy(vmi: VirtualMachineInstance, vm: VirtualMachine): boolean {
  return (vmi.metadata?.ownerReferences ?? []).some((r) => r.controller && r.uid === vm.metadata?.uid);
}

/**
 * Reconciles one VirtualMachine (`namespace/name` key): starts or stops its VMI as the
 * run strategy asks and mirrors the VMI into the VM's status.
 */
export class VmController implements KeyReconciler {
  private readonly revisions?: InstancetypeRevisions;
  private readonly live: LiveUpdates;

  constructor(private readonly d: VmControllerDeps) {
    if (d.catalog) this.revisions = new InstancetypeRevisions({ ...d, catalog: d.catalog });
    this.live = new LiveUpdates(d, (vm, paused, catalog) => this.buildVmi(vm, paused, catalog));
  }

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    let vm = this.d.vms.get(key);
    let vmi = this.d.vmis.get(key);
    if (!vm) {
      this.d.expectations.delete(key);
      // The VM is gone (orphaned, or deleted before it had our finalizer): release our
      // finalizer so the VMI can go too.
      if (vmi) await releaseVmi(this.d, vmi);
      return undefined;
    }
    if (vmi && !ownedBy(vmi, vm)) {
      // Not ours: as if there were none (upstream's claim leaves it out of the sync).
      if (vm.metadata?.deletionTimestamp) return void (await removeVmFinalizer(this.d, vm));
      await this.writeStatus(
        vm,
        this.computeStatus(vm, undefined, {
          reason: 'FailedCreate',
          message: `VirtualMachineInstance ${key} exists and is not controlled by this VirtualMachine`,
        }),
      );
      return undefined;
    }

    // As upstream's sync: a VM being deleted keeps our finalizer until its VMI is gone (this
    // controller deletes the VMI, at its own pace rather than the garbage collector's).
    // A patch whose test fails read a stale VM: the newer one's informer event brings it back.
    if (!vm.metadata?.deletionTimestamp) {
      const written = await addVmFinalizer(this.d, vm);
      if (!written) return undefined;
      vm = written;
    } else if (this.d.expectations.satisfied(key) && (!vmi || orphaning(vm))) {
      const released = await removeVmFinalizer(this.d, vm);
      // Without other finalizers the VM is gone now: nothing left to write.
      if (!released?.metadata?.finalizers?.length) return undefined;
      vm = released;
    }

    let syncError: SyncError | undefined;
    let requeueAfterMs: number | undefined;
    let vmAfterSync = vm;
    // Instance type revisions first (upstream's instancetype Sync): new status refs are written alone.
    let catalog: InstancetypeCatalog | undefined = this.d.catalog?.();
    if (this.revisions && !vm.metadata?.deletionTimestamp) {
      const r = await this.revisions.sync(vm);
      if (r.refs) return void (await this.writeStatus(vm, { ...(vm.status ?? {}), ...r.refs }));
      catalog = r.catalog ?? catalog;
      if (r.error) syncError = { reason: 'FailedCreate', message: r.error };
    }
    if (!syncError && this.d.expectations.satisfied(key)) {
      try {
        const r = await this.sync(key, vm, vmi, catalog);
        requeueAfterMs = r.requeueAfterMs;
        if (r.vm) vmAfterSync = r.vm;
        if (r.created) vmi = r.created; // as the API server returned it; the cache may lag
      } catch (err) {
        syncError = {
          reason:
            err instanceof RunStrategyError
              ? 'FailedRunStrategy'
              : err instanceof LiveUpdateError
                ? err.reason
                : 'FailedCreate',
          message: (err as Error).message,
        };
      }
    }
    if (vmAfterSync !== vm) return { requeueAfterMs };
    // Memory dumps (./memory-dump): a template change is carried on by the VM's next event.
    if (!syncError && !vm.metadata?.deletionTimestamp && (await handleMemoryDumpRequest(this.d, vm, vmi)))
      return undefined;

    const status = this.computeStatus(vm, vmi, syncError, catalog);
    await this.writeStatus(vm, status);

    // Once the VMI is final and recorded on the VM, let it go.
    if (vmi && (vmi.status?.phase === 'Succeeded' || vmi.status?.phase === 'Failed'))
      await releaseVmi(this.d, vmi);
    return syncError
      ? { requeueAfterMs: requeueAfterMs ?? 5000 }
      : requeueAfterMs !== undefined
        ? { requeueAfterMs }
        : undefined;
  }

  /** Carries out the run strategy's decision. */
  private async sync(
    key: string,
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
    catalog: InstancetypeCatalog | undefined,
  ): Promise<{ requeueAfterMs?: number; created?: VirtualMachineInstance; vm?: VirtualMachine }> {
    if (vm.metadata?.deletionTimestamp) {
      // Deleted with propagationPolicy Orphan: the VMI stays (the garbage collector orphans it).
      if (vmi && !vmi.metadata?.deletionTimestamp && !orphaning(vm)) await this.stopVmi(key, vm, vmi);
      return {};
    }
    const dataVolumes = this.d.dataVolumes;
    if (dataVolumes && vm.spec.dataVolumeTemplates?.length) {
      // As upstream: a VM waits for its DataVolumes (unless Halted, legacy behaviour).
      const ready = await handleDataVolumes({ ...this.d, dataVolumes }, vm);
      let halted = false;
      try {
        halted = effectiveRunStrategy(vm.spec) === 'Halted';
      } catch {
        // an invalid strategy is reported by decideRunStrategy below
      }
      if (!ready && !halted) return {};
    }
    const decision = decideRunStrategy({
      runStrategy: vm.spec.runStrategy,
      running: vm.spec.running,
      statusRunStrategy: vm.status?.runStrategy,
      stateChangeRequests: vm.status?.stateChangeRequests,
      vmi: vmiState(vmi),
      backoffSecondsLeft: backoffSecondsLeft(vm.status?.startFailure, this.now()),
    });
    switch (decision.action) {
      case 'none':
        if (vmi) await this.live.syncVolumes(vm, vmi);
        if (vmi) await this.live.syncCpus(vm, vmi, catalog);
        return {};
      case 'wait':
        return { requeueAfterMs: decision.retryAfterSeconds * 1000 };
      case 'start':
        return { created: await this.startVmi(key, vm, decision.paused, catalog) };
      case 'stop':
        if (vmi) await this.stopVmi(key, vm, vmi);
        if (decision.thenRequestStart) {
          const reqs = [...(vm.status?.stateChangeRequests ?? []), { action: 'Start' }];
          await this.writeStatus(vm, { ...(vm.status ?? {}), stateChangeRequests: reqs });
        }
        return {};
      case 'setRunStrategyAlways': {
        const next = structuredClone(vm);
        if (next.spec.running !== undefined) next.spec.running = true;
        else next.spec.runStrategy = 'Always';
        const written = await this.d.client.update(VirtualMachineType, next as never);
        this.d.onWrite?.('VirtualMachine', 'update');
        return { vm: written as VirtualMachine };
      }
    }
  }

  /** Builds the VMI this VM would start now: template expanded (`catalog`: default live), defaulted, owned by the VM. */
  buildVmi(
    vm: VirtualMachine,
    paused: boolean,
    catalog: InstancetypeCatalog | undefined = this.d.catalog?.(),
  ): { vmi?: VirtualMachineInstance; errors: string[] } {
    return vmiFromTemplate(vm, paused, this.d.config(), catalog);
  }

  private async startVmi(
    key: string,
    vm: VirtualMachine,
    paused: boolean,
    catalog: InstancetypeCatalog | undefined,
  ): Promise<VirtualMachineInstance> {
    const { vmi, errors } = this.buildVmi(vm, paused, catalog);
    if (vmi) vmi.spec = vmiSpecForStart(vm, vmi.spec);
    if (!vmi) {
      const message = `Error creating virtual machine instance: ${errors.join('; ')}`;
      this.d.recorder.event(vm, 'Warning', VmEventReason.FailedCreate, message);
      throw new Error(message);
    }
    this.d.expectations.expectCreations(key, 1);
    let created: VirtualMachineInstance;
    try {
      created = (await this.d.client.create(VmiResource, vmi as never)) as VirtualMachineInstance;
      this.d.onWrite?.('VirtualMachineInstance', 'create');
    } catch (err) {
      this.d.expectations.creationObserved(key);
      this.d.recorder.event(
        vm,
        'Warning',
        VmEventReason.FailedCreate,
        `Error creating virtual machine instance: ${(err as Error).message}`,
      );
      throw err;
    }
    this.d.recorder.event(
      vm,
      'Normal',
      VmEventReason.SuccessfulCreate,
      `Started the virtual machine by creating the new virtual machine instance ${vmi.metadata?.name}`,
    );
    return created;
  }

  private async stopVmi(key: string, vm: VirtualMachine, vmi: VirtualMachineInstance): Promise<void> {
    if (vmi.metadata?.deletionTimestamp) return;
    const uid = vmi.metadata?.uid ?? '';
    this.d.expectations.expectDeletions(key, 1);
    try {
      await this.d.client.delete(VmiResource, vmi.metadata?.name ?? '', {
        namespace: vmi.metadata?.namespace,
        preconditions: { uid },
      });
      this.d.onWrite?.('VirtualMachineInstance', 'delete');
    } catch (err) {
      this.d.expectations.deletionObserved(key);
      if (err instanceof NotFoundError) return;
      this.d.recorder.event(
        vm,
        'Warning',
        VmEventReason.FailedDelete,
        `Error deleting virtual machine instance ${vmi.metadata?.name}: ${(err as Error).message}`,
      );
      throw err;
    }
    this.d.recorder.event(
      vm,
      'Normal',
      VmEventReason.SuccessfulDelete,
      `Stopped the virtual machine by deleting the virtual machine instance ${uid}`,
    );
  }

  /** The VM's status as upstream's updateStatus computes it (vm-status.ts). */
  computeStatus(
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
    syncError?: SyncError,
    catalog?: InstancetypeCatalog,
  ): VirtualMachineStatus {
    const restartRequired = () => this.live.restartRequired(vm, vmi, catalog);
    const status = computeVmStatus(this.d, vm, vmi, syncError, restartRequired, () => this.now());
    const memoryDumpRequest = nextMemoryDumpRequest(vm, vmi);
    if (memoryDumpRequest) status.memoryDumpRequest = memoryDumpRequest;
    else delete status.memoryDumpRequest;
    return status;
  }

  private async writeStatus(vm: VirtualMachine, status: VirtualMachineStatus): Promise<void> {
    if (sameJson(vm.status ?? {}, status)) return;
    try {
      await this.d.client.updateStatus(VirtualMachineType, { ...vm, status } as never);
      this.d.onWrite?.('VirtualMachine', 'update');
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      throw err;
    }
  }
}
