/**
 * CDI's pvcIsPopulated: a claim annotated `cdi.kubevirt.io/storage.populatedFor: <dv>` was
 * filled for that DataVolume by someone else (a VM restore makes it from a snapshot), so
 * the DataVolume adopts it (becomes its controller owner) and is done with no import.
 */
import type { DataVolume } from '../../api/generated/cdi/types';
import { controllerRef } from '../common/owner-ref';
import { PersistentVolumeClaimType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { CdiLabels } from './annotations';

/** Whether `claim` was populated for the DataVolume `dv`. */
export function populatedFor(claim: KubeObject, dv: DataVolume): boolean {
  return claim.metadata?.annotations?.[CdiLabels.populatedFor] === dv.metadata?.name;
}

/** Makes `dv` the claim's controller owner (other controller refs replaced); returns the claim. */
export async function adoptClaim<C extends KubeObject>(
  client: ObjectClient,
  claim: C,
  dv: DataVolume,
): Promise<C> {
  const refs = claim.metadata?.ownerReferences ?? [];
  if (refs.some((r) => r.controller && r.uid === dv.metadata?.uid)) return claim;
  return client.update<C>(PersistentVolumeClaimType, {
    ...claim,
    metadata: {
      ...claim.metadata,
      ownerReferences: [
        ...refs.filter((r) => !r.controller),
        controllerRef('cdi.kubevirt.io/v1beta1', 'DataVolume', dv),
      ],
    },
  });
}
