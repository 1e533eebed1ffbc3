/** The controller owner reference a KubeVirt controller puts on the objects it creates. */
import type { OwnerReference as ApiOwnerReference } from '../../api/generated/types';

/** An ownerReferences entry with `controller` and `blockOwnerDeletion` set. */
export type OwnerReference = Required<ApiOwnerReference>;

/**
 * The reference that makes `owner` the controller of a new object: garbage collection
 * deletes the object with its owner, and foreground deletion of the owner waits for it.
 */
export function controllerRef(
  apiVersion: string,
  kind: string,
  owner: { metadata?: { name?: string; uid?: string } },
): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata?.name ?? '',
    uid: owner.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}
