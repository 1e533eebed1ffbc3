/**
 * virt-api's webhooks of clone.kubevirt.io (upstream's `/vm-clone-mutate-create` and
 * `/vm-clone-validate-create`): a clone without a target gets one named after its source,
 * and the rules of api/validation/clone are applied.
 */
import { randomInt } from 'node:crypto';
import type { FieldError } from '../../api/errors';
import { defaultCloneTarget, validateVirtualMachineClone } from '../../api/validation/clone';
import { type AdmissionRequest, toCauses } from './admission-review';
import { depthErrors, kindErrors } from './review-guard';
import type { WebhookContext, WebhookOutcome } from './webhooks';

const KIND = 'VirtualMachineClone';
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** upstream's rand.String(5): lowercase consonants and digits, no vowels (no words). */
function suffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

function guard(req: AdmissionRequest): FieldError[] {
  const deep = depthErrors(req);
  return deep.length ? deep : kindErrors(req, [KIND]);
}

async function mutate(req: AdmissionRequest): Promise<WebhookOutcome> {
  const wrong = guard(req);
  if (wrong.length) return { allowed: false, causes: toCauses(wrong) };
  if (req.operation !== 'CREATE') return { allowed: true };
  const target = defaultCloneTarget(req.object ?? {}, suffix());
  if (!target || !(req.object as { spec?: unknown } | undefined)?.spec) return { allowed: true };
  return { allowed: true, patch: [{ op: 'add', path: '/spec/target', value: target }] };
}

async function validate(req: AdmissionRequest, ctx: WebhookContext): Promise<WebhookOutcome> {
  const wrong = guard(req);
  if (wrong.length) return { allowed: false, causes: toCauses(wrong) };
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { allowed: true };
  const errors = validateVirtualMachineClone(req.object ?? {}, ctx.config(), req.operation);
  return errors.length ? { allowed: false, causes: toCauses(errors) } : { allowed: true };
}

/** The clone.kubevirt.io webhooks by path. */
export const CloneWebhooks = {
  '/vm-clone-mutate-create': mutate,
  '/vm-clone-validate-create': validate,
} as const;
