/**
 * Validation of a VirtualMachinePool (upstream's VM pool admitter): a VM template whose
 * spec is a valid VM spec, and a valid selector matching the VM template's labels.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { VirtualMachinePool } from '../generated/types';
import { validateObjectMeta } from './names';
import { validateReplicasAndSelector } from './replicas';
import { validateVirtualMachineSpec } from './vm';
import type { ValidationOptions } from './vmi';

/** Validates a VirtualMachinePool; returns every error with its field path. */
export function validateVirtualMachinePool(
  pool: VirtualMachinePool,
  config: ClusterConfig,
  options: ValidationOptions = {},
): FieldError[] {
  const field = FieldPath.of('spec');
  const errs = validateObjectMeta(pool.metadata);
  const spec = pool.spec;
  if (!spec?.virtualMachineTemplate) {
    // Upstream names `spec.template` here although the field is virtualMachineTemplate.
    return [
      ...errs,
      fieldError(field.child('template'), 'missing virtual machine template.', 'FieldValueRequired'),
    ];
  }
  errs.push(
    ...validateVirtualMachineSpec(
      field.child('virtualMachineTemplate', 'spec'),
      spec.virtualMachineTemplate.spec,
      config,
      options,
    ),
  );
  errs.push(...validateReplicasAndSelector(field, spec, spec.virtualMachineTemplate.metadata?.labels));
  return errs;
}
