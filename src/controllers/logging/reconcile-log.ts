/**
 * A controller's failed reconcile as a structured line, the way upstream's
 * `log.Log.Object(obj).Reason(err)` writes it: the object's `kind`, `namespace`, `name`
 * and, when the caller's cache has it, `uid`, plus the controller and the error.
 */
import type { Logger } from 'pino';

/** The kind each virt-controller work queue reconciles (by its controller name). */
export const CONTROLLER_KINDS: Readonly<Record<string, string>> = {
  vmi: 'VirtualMachineInstance',
  vm: 'VirtualMachine',
  replicaset: 'VirtualMachineInstanceReplicaSet',
  migration: 'VirtualMachineInstanceMigration',
  pool: 'VirtualMachinePool',
};

/** The fields of an object named by a work-queue key (`ns/name` or `name`). */
export function keyFields(
  controller: string,
  key: string,
  uidOf?: (controller: string, key: string) => string | undefined,
): Record<string, string> {
  const i = key.indexOf('/');
  const out: Record<string, string> = {};
  const kind = CONTROLLER_KINDS[controller];
  if (kind) out.kind = kind;
  if (i > 0) {
    out.namespace = key.slice(0, i);
    out.name = key.slice(i + 1);
  } else out.name = key;
  const uid = uidOf?.(controller, key);
  if (uid) out.uid = uid;
  return out;
}

/** `onError(controller, key, err)` writing an error line with the object's fields. */
export function reconcileErrorLogger(
  logger: Logger,
  uidOf?: (controller: string, key: string) => string | undefined,
): (controller: string, key: string, err: Error) => void {
  return (controller, key, err) =>
    logger.error(
      { controller, ...keyFields(controller, key, uidOf), reason: err.message },
      'reconcile failed',
    );
}
