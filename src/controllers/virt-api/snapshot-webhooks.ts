/**
 * virt-api's validating webhooks of snapshot.kubevirt.io (upstream's
 * `/virtualmachinesnapshots-validate` and `/virtualmachinerestores-validate`): the pure
 * rules of api/validation/snapshot, with the namespace's restores read for the
 * one-restore-per-target rule.
 */
import type { FieldError } from '../../api/errors';
import { validateVirtualMachineRestore, validateVirtualMachineSnapshot } from '../../api/validation/snapshot';
import { VirtualMachineRestoreType } from '../runtime/storage-resources';
import { type AdmissionRequest, toCauses } from './admission-review';
import { depthErrors, kindErrors } from './review-guard';
import type { WebhookContext, WebhookOutcome } from './webhooks';

type Obj = Record<string, unknown>;

const outcome = (errors: FieldError[]): WebhookOutcome =>
  errors.length ? { allowed: false, causes: toCauses(errors) } : { allowed: true };

function guard(req: AdmissionRequest, kind: string): FieldError[] {
  const deep = depthErrors(req);
  return deep.length ? deep : kindErrors(req, [kind]);
}

async function snapshotWebhook(req: AdmissionRequest, ctx: WebhookContext): Promise<WebhookOutcome> {
  const wrong = guard(req, 'VirtualMachineSnapshot');
  if (wrong.length) return outcome(wrong);
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { allowed: true };
  const old = req.operation === 'UPDATE' ? ((req.oldObject ?? {}) as Obj) : undefined;
  return outcome(validateVirtualMachineSnapshot((req.object ?? {}) as Obj, old, ctx.config()));
}

async function restoreWebhook(req: AdmissionRequest, ctx: WebhookContext): Promise<WebhookOutcome> {
  const wrong = guard(req, 'VirtualMachineRestore');
  if (wrong.length) return outcome(wrong);
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { allowed: true };
  const obj = (req.object ?? {}) as Obj;
  if (req.operation === 'UPDATE')
    return outcome(validateVirtualMachineRestore(obj, (req.oldObject ?? {}) as Obj, ctx.config()));
  const ns = req.namespace ?? (obj.metadata as { namespace?: string } | undefined)?.namespace;
  const restores = (
    await ctx.client.list<Obj & { metadata?: object }>(VirtualMachineRestoreType, { namespace: ns })
  ).items;
  return outcome(validateVirtualMachineRestore(obj, undefined, ctx.config(), { restores }));
}

/** The snapshot.kubevirt.io webhooks by path. */
export const SnapshotWebhooks = {
  '/virtualmachinesnapshots-validate': snapshotWebhook,
  '/virtualmachinerestores-validate': restoreWebhook,
} as const;
