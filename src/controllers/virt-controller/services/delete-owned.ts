/**
 * Deleting some of the objects a controller owns (scale-down of a ReplicaSet or a pool),
 * the way upstream's controllers do it: raise the delete expectations first, delete each
 * with a UID precondition (never a same-named successor), record an event per object,
 * lower the expectation again for a delete that did not happen. An object already gone
 * counts as deleted; any other error is recorded and stops the pass (the key is retried).
 */

import type { ControllerDeps, EventSubject, Expectations } from '../../common/controller-ports';
import { NotFoundError } from '../../runtime/errors';
import type { KubeObject, ResourceType } from '../../runtime/types';

/** What {@link deleteOwned} needs from the calling controller. */
export interface DeleteOwnedDeps extends ControllerDeps {
  expectations: Expectations;
}

/** One scale-down pass. */
export interface DeleteOwnedRequest<T extends KubeObject> {
  /** The owner's controller key (`namespace/name`), as its expectations are kept. */
  key: string;
  /** The owner, the subject of the events. */
  owner: EventSubject;
  /** The owned objects' resource. */
  resource: ResourceType;
  victims: readonly T[];
  /** Messages of the `SuccessfulDelete` and `FailedDelete` events, as upstream words them. */
  deleted: (o: T) => string;
  failed: (o: T, err: Error) => string;
  /** Called after each delete the server accepted (write accounting). */
  onDeleted?: () => void;
}

/** Deletes `victims` under the owner's delete expectations; see the module comment. */
export async function deleteOwned<T extends KubeObject>(
  d: DeleteOwnedDeps,
  r: DeleteOwnedRequest<T>,
): Promise<void> {
  const pending = d.expectations.pending(r.key);
  d.expectations.expectDeletions(r.key, (pending?.del ?? 0) + r.victims.length);
  for (const v of r.victims) {
    try {
      await d.client.delete(r.resource, v.metadata?.name ?? '', {
        namespace: v.metadata?.namespace,
        preconditions: { uid: v.metadata?.uid },
      });
      r.onDeleted?.();
      d.recorder.event(r.owner, 'Normal', 'SuccessfulDelete', r.deleted(v));
    } catch (err) {
      d.expectations.deletionObserved(r.key);
      if (err instanceof NotFoundError) continue;
      d.recorder.event(r.owner, 'Warning', 'FailedDelete', r.failed(v, err as Error));
      throw err;
    }
  }
}
