/**
 * A VirtualMachine's status as upstream's updateStatus computes it from the VM and its
 * VMI: run strategy, created/ready, generations, the carried-out state change request
 * dropped, crash-loop backoff bookkeeping, conditions and printableStatus.
 */
import type { DataVolume } from '../../../api/generated/cdi/types';
import type {
  VirtualMachine,
  VirtualMachineCondition,
  VirtualMachineInstance,
  VirtualMachineStatus,
} from '../../../api/generated/types';
import { type Expectations, type Lister, timestamp } from '../../common/controller-ports';
import { type Claim, hasUnboundClaim } from '../services/volumes';
import { hasDataVolumeErrors, hasDataVolumeProvisioning } from './datavolumes';
import { type PrintableStatusInput, printableStatus } from './printable-status';
import { effectiveRunStrategy, firstRequestDone, isSetToStart, type VmiState } from './run-strategy';
import { nextStartFailure } from './start-backoff';
import { type SyncFailure, vmConditions } from './vm-conditions';
import { VM_GENERATION_ANNOTATION } from './vmi-template';

/** What the status reads besides the VM and its VMI (a subset of the VM controller's deps). */
export interface VmStatusDeps {
  expectations: Expectations;
  claims?: Lister<Claim>;
  dataVolumes?: Lister<DataVolume>;
}

/** The run-strategy view of a VMI. */
export function vmiState(vmi: VirtualMachineInstance | undefined): VmiState | undefined {
  if (!vmi) return undefined;
  return {
    uid: vmi.metadata?.uid ?? '',
    phase: vmi.status?.phase,
    deleting: vmi.metadata?.deletionTimestamp !== undefined,
  };
}

const keyOf = (ns: string | undefined, name: string | undefined) => `${ns ?? ''}/${name ?? ''}`;

/**
 * The VM's next status. `restartRequired` is asked only when the conditions are set
 * (it expands the template, so it is not worked out earlier than needed).
 */
export function computeVmStatus(
  d: VmStatusDeps,
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
  syncError: SyncFailure | undefined,
  restartRequired: () => string | undefined,
  clock: () => Date,
): VirtualMachineStatus {
  const key = keyOf(vm.metadata?.namespace, vm.metadata?.name);
  const now = timestamp(clock());
  const status: VirtualMachineStatus = structuredClone(vm.status ?? {});
  let strategy: string;
  try {
    strategy = effectiveRunStrategy(vm.spec);
  } catch (err) {
    strategy = 'Unknown';
    syncError ??= { reason: 'FailedRunStrategy', message: (err as Error).message };
  }
  status.runStrategy = strategy;
  status.created = vmi !== undefined;
  const vmiReady = vmi?.status?.conditions?.find((c) => c.type === 'Ready');
  status.ready = vmi !== undefined && vmiReady?.status === 'True' && vmi.status?.phase === 'Running';
  status.desiredGeneration = vm.metadata?.generation;
  const vmiGen = Number(vmi?.metadata?.annotations?.[VM_GENERATION_ANNOTATION]);
  if (Number.isFinite(vmiGen) && vmiGen > 0) status.observedGeneration = vmiGen;

  // stateChangeRequests: drop the first one once carried out.
  if (firstRequestDone(status.stateChangeRequests, vmiState(vmi))) {
    status.stateChangeRequests = status.stateChangeRequests?.slice(1);
    if (status.stateChangeRequests?.length === 0) delete status.stateChangeRequests;
  }

  // Crash-loop backoff bookkeeping.
  const everRunning = (vmi?.status?.phaseTransitionTimestamps ?? []).some((t) => t.phase === 'Running');
  const failure = nextStartFailure(
    status.startFailure,
    strategy,
    vmi ? { uid: vmi.metadata?.uid ?? '', phase: vmi.status?.phase, everRunning } : undefined,
    clock(),
  );
  if (failure) status.startFailure = failure;
  else delete status.startFailure;

  status.conditions = vmConditions(
    (status.conditions ?? []) as VirtualMachineCondition[],
    vmi,
    syncError,
    restartRequired(),
    now,
  );

  const input: PrintableStatusInput = {
    vmDeleting: vm.metadata?.deletionTimestamp !== undefined,
    runStrategy: strategy,
    setToStart: (() => {
      try {
        return isSetToStart({
          ...vm.spec,
          stateChangeRequests: status.stateChangeRequests,
          vmi: vmiState(vmi),
        });
      } catch {
        return false;
      }
    })(),
    startExpected: (d.expectations.pending(key)?.add ?? 0) > 0,
    stopExpected: (d.expectations.pending(key)?.del ?? 0) > 0,
    consecutiveFailCount: status.startFailure?.consecutiveFailCount ?? 0,
    provisioning: d.dataVolumes ? hasDataVolumeProvisioning(vm, d.dataVolumes) : false,
    dataVolumeError: d.dataVolumes ? hasDataVolumeErrors(vm, d.dataVolumes) : false,
    unboundPvc: d.claims
      ? hasUnboundClaim(vm.spec.template.spec, vm.metadata?.namespace ?? '', d.claims)
      : false,
    vmi: vmi && {
      phase: vmi.status?.phase,
      deleting: vmi.metadata?.deletionTimestamp !== undefined,
      conditions: vmi.status?.conditions,
      migrating:
        vmi.status?.migrationState !== undefined &&
        !vmi.status.migrationState.completed &&
        !vmi.status.migrationState.failed,
    },
  };
  status.printableStatus = printableStatus(input);
  return status;
}
