/**
 * The VM controller's finalizers (upstream's addVMFinalizer, removeVMFinalizer and the
 * VMI finalizer release of pkg/virt-controller/watch/vm): the VM keeps the controller's
 * finalizer while it lives, and its VMI keeps one until its end is recorded on the VM.
 * Each change is upstream's JSON patch (test the finalizers as read, replace them), so a
 * concurrent change fails it and the informer event that follows brings the VM back.
 * Apart from ./controller.ts, which decides when.
 */
import type { VirtualMachine, VirtualMachineInstance } from '../../../api/generated/types';
import { Finalizers } from '../../../api/labels';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, InvalidError, NotFoundError } from '../../runtime/errors';
import { VirtualMachineType } from '../../runtime/resources';
import type { JsonPatchOp, ObjectClient } from '../../runtime/types';

/** What the finalizer writes need from the VM controller. */
export interface VmFinalizerDeps {
  client: ObjectClient;
  onWrite?: (kind: 'VirtualMachineInstance' | 'VirtualMachine', verb: 'patch') => void;
}

/** The garbage collector's finalizer asking to orphan the dependents (metav1.FinalizerOrphanDependents). */
const ORPHAN_FINALIZER = 'orphan';

/** Whether `vm` is being deleted with propagationPolicy Orphan (its VMI stays). */
export const orphaning = (vm: VirtualMachine) => vm.metadata?.finalizers?.includes(ORPHAN_FINALIZER) ?? false;

/** upstream getPatchFinalizerOps: test the finalizers as read (null when absent), replace them. */
function finalizerPatch(old: string[] | undefined, next: string[]): JsonPatchOp[] {
  return [
    { op: 'test', path: '/metadata/finalizers', value: old ?? null },
    { op: old ? 'replace' : 'add', path: '/metadata/finalizers', value: next },
  ];
}

/**
 * Removes the VM controller's finalizer from a VMI, with upstream's JSON patch (test
 * the finalizers, replace them): a concurrent change to them fails the patch, and the
 * VMI's informer event brings the VM back here.
 */
export async function releaseVmi(d: VmFinalizerDeps, vmi: VirtualMachineInstance): Promise<void> {
  const f = vmi.metadata?.finalizers ?? [];
  if (!f.includes(Finalizers.virtualMachineController)) return;
  const next = f.filter((x) => x !== Finalizers.virtualMachineController);
  try {
    await d.client.patch(VmiResource, vmi.metadata?.name ?? '', finalizerPatch(f, next), {
      namespace: vmi.metadata?.namespace,
      type: 'json',
    });
    d.onWrite?.('VirtualMachineInstance', 'patch');
  } catch (err) {
    if (err instanceof ConflictError || err instanceof NotFoundError || err instanceof InvalidError) return;
    throw err;
  }
}

/**
 * upstream addVMFinalizer: the VM keeps our finalizer while it lives. Returns the VM as
 * written, or undefined when the patch's test failed (the cached VM was stale) or the VM is gone.
 */
export async function addVmFinalizer(
  d: VmFinalizerDeps,
  vm: VirtualMachine,
): Promise<VirtualMachine | undefined> {
  const f = vm.metadata?.finalizers;
  if (f?.includes(Finalizers.virtualMachineController)) return vm;
  return patchVmFinalizers(d, vm, [...(f ?? []), Finalizers.virtualMachineController]);
}

/**
 * upstream removeVMFinalizer: the VM's VMI is gone (or orphaned). Returns the VM as
 * written, or undefined when the patch's test failed or the VM is gone.
 */
export async function removeVmFinalizer(
  d: VmFinalizerDeps,
  vm: VirtualMachine,
): Promise<VirtualMachine | undefined> {
  const f = vm.metadata?.finalizers ?? [];
  if (!f.includes(Finalizers.virtualMachineController)) return vm;
  return patchVmFinalizers(
    d,
    vm,
    f.filter((x) => x !== Finalizers.virtualMachineController),
  );
}

async function patchVmFinalizers(
  d: VmFinalizerDeps,
  vm: VirtualMachine,
  next: string[],
): Promise<VirtualMachine | undefined> {
  try {
    const ops = finalizerPatch(vm.metadata?.finalizers, next);
    const written = (await d.client.patch(VirtualMachineType, vm.metadata?.name ?? '', ops, {
      namespace: vm.metadata?.namespace,
      type: 'json',
    })) as VirtualMachine;
    d.onWrite?.('VirtualMachine', 'patch');
    return written;
  } catch (err) {
    if (err instanceof InvalidError || err instanceof ConflictError || err instanceof NotFoundError)
      return undefined;
    throw err;
  }
}
