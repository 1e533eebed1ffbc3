/**
 * Validation of a VirtualMachineInstanceReplicaSet (upstream's VMIRS admitter): a
 * template whose spec is a valid VMI spec, and a valid selector matching its labels.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceReplicaSet } from '../generated/types';
import { validateObjectMeta } from './names';
import { validateReplicasAndSelector } from './replicas';
import { validateVirtualMachineInstanceSpec } from './vmi-spec';

/** Validates a VirtualMachineInstanceReplicaSet; returns every error with its field path. */
export function validateVirtualMachineInstanceReplicaSet(
  rs: VirtualMachineInstanceReplicaSet,
  config: ClusterConfig,
): FieldError[] {
  const field = FieldPath.of('spec');
  const errs = validateObjectMeta(rs.metadata);
  const spec = rs.spec;
  if (!spec?.template) {
    return [
      ...errs,
      fieldError(field.child('template'), 'missing virtual machine template.', 'FieldValueRequired'),
    ];
  }
  errs.push(
    ...validateVirtualMachineInstanceSpec(field.child('template', 'spec'), spec.template.spec, config),
  );
  errs.push(...validateReplicasAndSelector(field, spec, spec.template.metadata?.labels));
  return errs;
}
