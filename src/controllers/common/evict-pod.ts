/**
 * Evicting a pod through the API's `pods/{name}/eviction` subresource (policy/v1
 * Eviction), as upstream's controllers do: PodDisruptionBudgets and virt-api's eviction
 * webhook apply, so a VMI that must migrate on eviction is not killed. A store that does not
 * serve the subresource (the embedded store: no budgets, no webhooks) gets a delete,
 * which is what an allowed eviction does.
 */
import { NotFoundError } from '../runtime/errors';
import { PodType, resourceType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

/** Evicts `namespace/name`; a pod already gone is not an error. */
export async function evictPod(client: ObjectClient, namespace: string, name: string): Promise<void> {
  // The subresource as a collection of its own: POST .../pods/<name>/eviction.
  const eviction = resourceType(
    '',
    'v1',
    'Eviction',
    `pods/${encodeURIComponent(name)}/eviction`,
    true,
    false,
  );
  const body = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } } as KubeObject;
  try {
    await client.create(eviction, body);
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
    // Not served, or the pod is gone: deleting settles which.
    await client.delete(PodType, name, { namespace }).catch((d) => {
      if (!(d instanceof NotFoundError)) throw d;
    });
  }
}
