/**
 * The PersistentVolumeClaims a VMI or VM template needs, and their state, as upstream's
 * storage helpers read them (a DataVolume's claim has the DataVolume's name).
 */
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceSpec,
  VolumeStatus,
} from '../../../api/generated/types';
import type { Lister } from '../../common/controller-ports';

/** core/v1 PersistentVolumeClaim (defined with the other core kinds). */
export { PersistentVolumeClaimType } from '../../runtime/resources';

/** The fields of a claim the controllers read. */
export interface Claim {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  spec?: {
    accessModes?: string[];
    volumeMode?: string;
    storageClassName?: string;
    resources?: { requests?: Record<string, string> };
  };
  status?: { phase?: string; capacity?: Record<string, string> };
}

/** upstream storagetypes.DefaultFSOverhead: CDI's default filesystem overhead, used when no CDIConfig says otherwise. */
export const DEFAULT_FS_OVERHEAD = '0.055';

/** Claim names the spec's volumes refer to (hotplugged ones excluded). */
export function claimNames(spec: VirtualMachineInstanceSpec | undefined): string[] {
  const out: string[] = [];
  for (const v of spec?.volumes ?? []) {
    if (v.persistentVolumeClaim && !v.persistentVolumeClaim.hotpluggable)
      out.push(v.persistentVolumeClaim.claimName);
    else if (v.dataVolume && !v.dataVolume.hotpluggable) out.push(v.dataVolume.name);
  }
  return out;
}

/** The first missing claim, as upstream's FailedPvcNotFound message names it. */
export function missingClaim(
  spec: VirtualMachineInstanceSpec | undefined,
  namespace: string,
  claims: Lister<Claim>,
): string | undefined {
  const name = claimNames(spec).find((n) => !claims.get(`${namespace}/${n}`));
  return name === undefined ? undefined : `PVC ${namespace}/${name} does not exist, waiting for it to appear`;
}

/** Whether a referenced claim exists but is not bound yet. */
export function hasUnboundClaim(
  spec: VirtualMachineInstanceSpec | undefined,
  namespace: string,
  claims: Lister<Claim>,
): boolean {
  return claimNames(spec).some((n) => {
    const c = claims.get(`${namespace}/${n}`);
    return c !== undefined && c.status?.phase !== 'Bound';
  });
}

/** The claim name of a PVC or DataVolume volume (upstream PVCNameFromVirtVolume). */
function claimOf(v: NonNullable<VirtualMachineInstanceSpec['volumes']>[number]): string | undefined {
  return v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name ?? v.memoryDump?.claimName;
}

/**
 * Names of the volumes whose claim is `volumeMode: Block` (upstream IsPVCBlockFromStore):
 * the launcher pod gets them as `volumeDevices` at `/dev/<volume>`, not as mounts.
 */
export function blockVolumeNames(
  vmi: VirtualMachineInstance,
  claims: Lister<Claim> | undefined,
): Set<string> {
  const out = new Set<string>();
  if (!claims) return out;
  const ns = vmi.metadata?.namespace ?? '';
  for (const v of vmi.spec.volumes ?? []) {
    const name = claimOf(v);
    if (name !== undefined && claims.get(`${ns}/${name}`)?.spec?.volumeMode === 'Block') out.add(v.name);
  }
  return out;
}

/** upstream IsPreallocated: an annotation ending in `/storage.preallocation` or `/storage.thick-provisioned` is "true". */
function isPreallocated(annotations: Record<string, string> | undefined): boolean {
  return Object.entries(annotations ?? {}).some(
    ([k, v]) =>
      v === 'true' && (k.includes('/storage.preallocation') || k.includes('/storage.thick-provisioned')),
  );
}

/**
 * `status.volumeStatus` as upstream's VMI controller keeps it (updateVolumeStatus and
 * processPVCInfo): an entry per volume, sorted by name, existing entries kept, PVC and
 * DataVolume volumes carrying their claim's access modes, volume mode, capacity, requests
 * and filesystem overhead (CDI's default: no CDIConfig is read), which the launcher needs
 * to size a filesystem claim's `disk.img`.
 */
export function nextVolumeStatus(vmi: VirtualMachineInstance, claims: Lister<Claim>): VolumeStatus[] {
  const old = new Map((vmi.status?.volumeStatus ?? []).map((s) => [s.name, s]));
  const ns = vmi.metadata?.namespace ?? '';
  const out: VolumeStatus[] = [];
  for (const v of vmi.spec.volumes ?? []) {
    const status: VolumeStatus = { ...(old.get(v.name) ?? { name: v.name, target: '' }) };
    const name = claimOf(v);
    const pvc = name === undefined ? undefined : claims.get(`${ns}/${name}`);
    if (pvc) {
      status.persistentVolumeClaimInfo = {
        claimName: pvc.metadata?.name,
        accessModes: pvc.spec?.accessModes as NonNullable<
          VolumeStatus['persistentVolumeClaimInfo']
        >['accessModes'],
        volumeMode: pvc.spec?.volumeMode as 'Block' | 'Filesystem' | undefined,
        capacity: pvc.status?.capacity,
        requests: pvc.spec?.resources?.requests,
        preallocated: isPreallocated(pvc.metadata?.annotations),
        filesystemOverhead: DEFAULT_FS_OVERHEAD,
      };
    }
    out.push(status);
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
