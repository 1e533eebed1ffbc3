/**
 * Memory dumps in the VM controller (upstream pkg/storage/memorydump, called from the VM
 * controller's sync and status update). virt-api's `memorydump` subresource puts a
 * request in `status.memoryDumpRequest` (Associating); here:
 * - Associating, VMI running: the claim becomes a `memoryDump` volume (hotpluggable,
 *   named as the claim) of the VM's template and of the VMI, which brings an attachment
 *   pod and virt-handler's dump; the request goes InProgress once the template has it.
 * - InProgress: the VMI's volume status carries the dump's timestamps; at
 *   MemoryDumpCompleted the request goes Unmounting (with the file name), at
 *   MemoryDumpFailed Failed.
 * - Unmounting / Failed: the claim is annotated `kubevirt.io/memory-dump` (the file name,
 *   or "Memory dump failed") and the volume leaves the VMI; once its status entry is gone
 *   the request is Completed. The template keeps the volume until the request is removed.
 * - `removememorydump` (remove: true) → Dissociating: the volume leaves the VMI and the
 *   template, then the request goes.
 * A VMI started while a dump is done gets no memory dump volume.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceSpec,
  VirtualMachineMemoryDumpRequest,
  Volume,
} from '../../../api/generated/types';
import type { Lister } from '../../common/controller-ports';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, InvalidError, NotFoundError } from '../../runtime/errors';
import { PersistentVolumeClaimType, VirtualMachineType } from '../../runtime/resources';
import type { JsonPatchOp, KubeObject, ObjectClient } from '../../runtime/types';
import type { Claim } from '../services/volumes';

/** upstream's MemoryDumpPhase values. */
export const MemoryDumpPhase = {
  Associating: 'Associating',
  InProgress: 'InProgress',
  Unmounting: 'Unmounting',
  Completed: 'Completed',
  Dissociating: 'Dissociating',
  Failed: 'Failed',
} as const;

/** upstream v1.PVCMemoryDumpAnnotation: on the claim, the dump's file name. */
export const PVC_MEMORY_DUMP_ANNOTATION = 'kubevirt.io/memory-dump';
/** What the annotation says when the dump failed (upstream's `failed`). */
const FAILED_ANNOTATION = 'Memory dump failed';

/** upstream HasCompleted: a request past Associating and InProgress. */
export function memoryDumpHasCompleted(vm: VirtualMachine): boolean {
  const r = vm.status?.memoryDumpRequest;
  return !!r && r.phase !== MemoryDumpPhase.Associating && r.phase !== MemoryDumpPhase.InProgress;
}

/** The spec's volumes without volume `claimName` (upstream RemoveMemoryDumpVolumeFromVMISpec). */
export function withoutMemoryDumpVolume(volumes: Volume[] | undefined, claimName: string): Volume[] {
  return (volumes ?? []).filter((v) => v.name !== claimName);
}

/** The spec's volumes with the memory dump volume of `claimName` (upstream applyMemoryDumpVolumeRequestOnVMISpec). */
export function withMemoryDumpVolume(volumes: Volume[] | undefined, claimName: string): Volume[] {
  const list = volumes ?? [];
  if (list.some((v) => v.name === claimName)) return list;
  return [...list, { name: claimName, memoryDump: { claimName, hotpluggable: true } }];
}

/** A VMI spec for a VM start: without the memory dump volume once the dump is done (upstream's setupVMIFromVM). */
export function vmiSpecForStart(
  vm: VirtualMachine,
  spec: VirtualMachineInstanceSpec,
): VirtualMachineInstanceSpec {
  const r = vm.status?.memoryDumpRequest;
  if (!r || !memoryDumpHasCompleted(vm)) return spec;
  return { ...spec, volumes: withoutMemoryDumpVolume(spec.volumes, r.claimName) };
}

/**
 * upstream UpdateRequest: the request after this look at the VM and its VMI (undefined:
 * the request is over and goes from the status).
 */
export function nextMemoryDumpRequest(
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
): VirtualMachineMemoryDumpRequest | undefined {
  const cur = vm.status?.memoryDumpRequest;
  if (!cur) return undefined;
  const next: VirtualMachineMemoryDumpRequest = { ...cur };
  if (cur.remove) next.phase = MemoryDumpPhase.Dissociating;
  const inTemplate = (vm.spec.template?.spec?.volumes ?? []).some((v) => v.name === cur.claimName);
  const status = (vmi?.status?.volumeStatus ?? []).find((s) => s.name === cur.claimName);
  switch (cur.phase) {
    case MemoryDumpPhase.Completed:
      return cur;
    case MemoryDumpPhase.Associating:
      if (inTemplate) next.phase = MemoryDumpPhase.InProgress;
      break;
    case MemoryDumpPhase.InProgress: {
      const info = status?.memoryDumpVolume;
      if (!info) break;
      if (info.startTimestamp) next.startTimestamp = info.startTimestamp;
      if (status?.phase === 'MemoryDumpCompleted') {
        next.phase = MemoryDumpPhase.Unmounting;
        next.endTimestamp = info.endTimestamp;
        next.fileName = info.targetFileName;
      } else if (status?.phase === 'MemoryDumpFailed') {
        next.phase = MemoryDumpPhase.Failed;
        next.message = status.message;
        next.endTimestamp = info.endTimestamp;
      }
      break;
    }
    case MemoryDumpPhase.Unmounting:
      if (!status) next.phase = MemoryDumpPhase.Completed;
      break;
    case MemoryDumpPhase.Dissociating:
      if (!status && !inTemplate) return undefined;
      break;
  }
  return next;
}

export interface MemoryDumpDeps {
  client: ObjectClient;
  claims?: Lister<Claim>;
  onWrite?: (kind: 'VirtualMachineInstance' | 'VirtualMachine', verb: 'patch') => void;
}

/** A JSON patch replacing the list at `path`, testing the list it replaces. */
function listPatch(path: string, old: unknown[] | undefined, value: unknown[]): JsonPatchOp[] {
  return old === undefined
    ? [{ op: 'add', path, value }]
    : [
        { op: 'test', path, value: old },
        { op: 'replace', path, value },
      ];
}

/** Patches and swallows what a newer object explains (its informer event brings it back). */
async function patchQuietly(f: () => Promise<unknown>): Promise<boolean> {
  try {
    await f();
    return true;
  } catch (err) {
    if (err instanceof ConflictError || err instanceof NotFoundError || err instanceof InvalidError)
      return false;
    throw err;
  }
}

/**
 * upstream HandleRequest: brings the VMI's and the template's volumes and the claim's
 * annotation in line with the request. Resolves true when it changed the VM's template
 * (the VM's next event carries on).
 */
export async function handleMemoryDumpRequest(
  d: MemoryDumpDeps,
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
): Promise<boolean> {
  const r = vm.status?.memoryDumpRequest;
  if (!r) return false;
  const ns = vm.metadata?.namespace;
  const vmiHas = (vmi?.spec.volumes ?? []).some((v) => v.name === r.claimName);
  const patchVmi = async (volumes: Volume[]): Promise<boolean> => {
    if (!vmi) return false;
    const ok = await patchQuietly(() =>
      d.client.patch(
        VmiResource,
        vmi.metadata?.name ?? '',
        listPatch('/spec/volumes', vmi.spec.volumes, volumes),
        {
          namespace: ns,
          type: 'json',
        },
      ),
    );
    if (ok) d.onWrite?.('VirtualMachineInstance', 'patch');
    return ok;
  };
  const patchTemplate = async (volumes: Volume[]) => {
    const tpl = vm.spec.template?.spec;
    const ok = await patchQuietly(() =>
      d.client.patch(
        VirtualMachineType,
        vm.metadata?.name ?? '',
        listPatch('/spec/template/spec/volumes', tpl?.volumes, volumes),
        { namespace: ns, type: 'json' },
      ),
    );
    if (ok) d.onWrite?.('VirtualMachine', 'patch');
    return ok;
  };
  const tplVolumes = vm.spec.template?.spec?.volumes;
  switch (r.phase) {
    case MemoryDumpPhase.Associating: {
      const running = vmi && !vmi.metadata?.deletionTimestamp && vmi.status?.phase === 'Running';
      if (!running) return false;
      // The template only once the VMI has it: InProgress (the template having it) adds nothing.
      if (!vmiHas && !(await patchVmi(withMemoryDumpVolume(vmi.spec.volumes, r.claimName)))) return false;
      const want = withMemoryDumpVolume(tplVolumes, r.claimName);
      return want !== tplVolumes && (await patchTemplate(want));
    }
    case MemoryDumpPhase.Unmounting:
    case MemoryDumpPhase.Failed:
      await annotateClaim(d, vm, r);
      if (vmiHas && vmi) await patchVmi(withoutMemoryDumpVolume(vmi.spec.volumes, r.claimName));
      return false;
    case MemoryDumpPhase.Dissociating: {
      if (vmiHas && vmi) await patchVmi(withoutMemoryDumpVolume(vmi.spec.volumes, r.claimName));
      if (!(tplVolumes ?? []).some((v) => v.name === r.claimName)) return false;
      return patchTemplate(withoutMemoryDumpVolume(tplVolumes, r.claimName));
    }
  }
  return false;
}

/** upstream patchMemoryDumpPVCAnnotation: the claim says which file holds the dump (or that it failed). */
async function annotateClaim(d: MemoryDumpDeps, vm: VirtualMachine, r: VirtualMachineMemoryDumpRequest) {
  const ns = vm.metadata?.namespace ?? '';
  const value = r.phase === MemoryDumpPhase.Failed ? FAILED_ANNOTATION : r.fileName;
  if (!value) return;
  // The cache first (as upstream's pvcStore); without a claim watch, the API.
  const claim =
    d.claims?.get(`${ns}/${r.claimName}`) ??
    (await d.client.get<Claim & KubeObject>(PersistentVolumeClaimType, r.claimName, ns).catch((e) => {
      if (e instanceof NotFoundError) return undefined;
      throw e;
    }));
  if (!claim)
    throw new Error(`memory dump: PersistentVolumeClaim ${ns}/${r.claimName} not found to annotate`);
  const annotations = claim.metadata?.annotations;
  if (annotations?.[PVC_MEMORY_DUMP_ANNOTATION] === value) return;
  const ops: JsonPatchOp[] = annotations
    ? [{ op: 'add', path: '/metadata/annotations/kubevirt.io~1memory-dump', value }]
    : [{ op: 'add', path: '/metadata/annotations', value: { [PVC_MEMORY_DUMP_ANNOTATION]: value } }];
  await patchQuietly(() =>
    d.client.patch(PersistentVolumeClaimType, r.claimName, ops, { namespace: ns, type: 'json' }),
  );
}
