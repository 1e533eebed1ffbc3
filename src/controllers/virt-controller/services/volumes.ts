/**
 * The PersistentVolumeClaims a VMI or VM template needs, and their state, as upstream's
 * storage helpers read them (a DataVolume's claim has the DataVolume's name).
 */
import type { VirtualMachineInstanceSpec } from '../../../api/generated/types';
import type { Lister } from './ports';

/** core/v1 PersistentVolumeClaim (defined with the other core kinds). */
export { PersistentVolumeClaimType } from '../../runtime/resources';

/** The fields of a claim the controllers read. */
export interface Claim {
  metadata?: { name?: string; namespace?: string };
  status?: { phase?: string };
}

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
