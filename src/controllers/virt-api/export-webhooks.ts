/**
 * virt-api's webhook of export.kubevirt.io (upstream's `/virtualmachineexports-validate`):
 * the source's kind, group and name on create, an unchanged spec on update
 * (api/validation/vmexport).
 */
import type { FieldError } from '../../api/errors';
import { validateVirtualMachineExport } from '../../api/validation/vmexport';
import { type AdmissionRequest, toCauses } from './admission-review';
import { depthErrors, kindErrors } from './review-guard';
import type { WebhookOutcome } from './webhooks';

function guard(req: AdmissionRequest): FieldError[] {
  const deep = depthErrors(req);
  return deep.length ? deep : kindErrors(req, ['VirtualMachineExport']);
}

async function validate(req: AdmissionRequest): Promise<WebhookOutcome> {
  const wrong = guard(req);
  if (wrong.length) return { allowed: false, causes: toCauses(wrong) };
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { allowed: true };
  const errors = validateVirtualMachineExport(req.object ?? {}, req.operation, req.oldObject);
  return errors.length ? { allowed: false, causes: toCauses(errors) } : { allowed: true };
}

/** The export.kubevirt.io webhook by path. */
export const ExportWebhooks = { '/virtualmachineexports-validate': validate } as const;
