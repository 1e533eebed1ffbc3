/**
 * A VM's instance type and preference matchers (upstream's validateInstancetypeMatcher and
 * validatePreferenceMatcher in pkg/instancetype/webhooks/vm): a name or a volume to infer
 * it from, not both, and a known failure policy.
 */
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { VirtualMachine } from '../generated/types';

const policies = ['IgnoreInferFromVolumeFailure', 'RejectInferFromVolumeFailure'];

/** The matcher errors of `vm`. */
export function validateMatchers(vm: VirtualMachine): FieldError[] {
  const errs: FieldError[] = [];
  for (const which of ['instancetype', 'preference'] as const) {
    const m = vm.spec?.[which];
    if (!m) continue;
    const p = FieldPath.of('spec', which);
    const Matcher = which === 'instancetype' ? 'InstancetypeMatcher' : 'PreferenceMatcher';
    if (!m.name && !m.inferFromVolume) {
      errs.push(
        fieldError(
          p,
          `Either Name or InferFromVolume should be provided within the ${Matcher}`,
          'FieldValueNotFound',
        ),
      );
    }
    if (m.inferFromVolume && m.name) {
      errs.push(
        fieldError(
          p.child('name'),
          'Name already set, should be cleared before setting inferFromVolume',
          'FieldValueNotSupported',
        ),
      );
    }
    if (m.inferFromVolume && m.kind) {
      errs.push(
        fieldError(
          p.child('kind'),
          'Kind already set, should be cleared before setting inferFromVolume',
          'FieldValueNotSupported',
        ),
      );
    }
    const policy = m.inferFromVolumeFailurePolicy;
    if (policy !== undefined && !policies.includes(policy)) {
      errs.push(
        fieldError(
          p.child('inferFromVolumeFailurePolicy'),
          `Invalid value '${policy}' for InferFromVolumeFailurePolicy`,
        ),
      );
    }
  }
  return errs;
}

/** Whether a matcher still waits for its inference (virt-api's mutating webhook does it). */
export function awaitsInference(vm: VirtualMachine): boolean {
  return !!(vm.spec?.instancetype?.inferFromVolume || vm.spec?.preference?.inferFromVolume);
}
