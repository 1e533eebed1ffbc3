/**
 * virt-api's lines about the objects it acts on, as upstream's `log.Log.Object(vmi)`
 * lines: each subresource call (pause, console, start, ...) and each admission refusal
 * names the object with the fields every component uses on a VMI's lines (`kind`,
 * `namespace`, `name`, `uid`; logging/logger.ts), so one VMI's lines can be followed
 * from virt-api through virt-controller, virt-handler and its launcher.
 */
import type { AdmissionRequest, StatusCause } from './admission-review';
import { HttpError } from './http-error';

/** Where the lines go: a pino logger's `info` and `warn` (fields first, as pino takes them). */
export interface ObjectLog {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
}

/** The kinds whose subresources virt-api serves, by their resource name. */
const KINDS: Record<string, string> = {
  virtualmachineinstances: 'VirtualMachineInstance',
  virtualmachines: 'VirtualMachine',
};

/** One subresource call on `resource` `ns/name`. */
export interface SubresourceCall {
  resource: string;
  namespace: string;
  name: string;
  subresource: string;
  method: string;
  /** The object's uid (looked up for the line; undefined when it does not exist). */
  uid?: string;
}

/** The object fields of a subresource call's line. */
export function callFields(c: SubresourceCall): Record<string, unknown> {
  return {
    kind: KINDS[c.resource] ?? c.resource,
    namespace: c.namespace,
    name: c.name,
    uid: c.uid,
    subresource: c.subresource,
    method: c.method,
  };
}

/** Logs a finished subresource call: info when it succeeded, warn with the code and reason when not. */
export function logSubresource(log: ObjectLog, c: SubresourceCall, error?: unknown): void {
  const fields = callFields(c);
  const what = `${c.subresource} on ${fields.kind} ${c.namespace}/${c.name}`;
  if (error === undefined) {
    log.info(fields, `subresource ${what}`);
    return;
  }
  const code = error instanceof HttpError ? error.code : 500;
  log.warn({ ...fields, code, reason: (error as Error).message }, `subresource ${what} failed`);
}

/** Logs a webhook's refusal with the object it refused and each cause's field path. */
export function logAdmissionRefusal(
  log: ObjectLog,
  webhook: string,
  r: AdmissionRequest,
  causes: readonly StatusCause[],
): void {
  const meta = ((r.object ?? r.oldObject)?.metadata ?? {}) as {
    namespace?: string;
    name?: string;
    uid?: string;
  };
  log.info(
    {
      kind: r.kind.kind,
      namespace: r.namespace ?? meta.namespace,
      name: r.name || meta.name,
      // The API server sets the uid before admission (a CREATE's object has one too).
      uid: meta.uid,
      operation: r.operation,
      webhook,
      causes: causes.map((c) => `${c.field}: ${c.message}`),
    },
    `admission refused ${r.operation} of ${r.kind.kind} ${r.namespace ?? meta.namespace ?? ''}/${r.name || meta.name || ''}`,
  );
}
