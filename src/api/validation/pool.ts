/**
 * Validation of a VirtualMachinePool (upstream's VM pool admitter): a VM template whose
 * spec is a valid VM spec, and a valid selector matching the VM template's labels.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { VirtualMachinePool } from '../generated/types';
import { labelSelectorMatches, validateLabelSelector } from './label-selector';
import { validateObjectMeta } from './names';
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
  if (spec.replicas !== undefined && spec.replicas < 0) {
    errs.push(
      fieldError(
        field.child('replicas'),
        `Invalid value: ${spec.replicas}: must be greater than or equal to 0`,
      ),
    );
  }
  const selectorErrs = validateLabelSelector(field.child('selector'), spec.selector);
  if (selectorErrs.length > 0) errs.push(...selectorErrs);
  else if (!labelSelectorMatches(spec.selector, spec.virtualMachineTemplate.metadata?.labels)) {
    errs.push(fieldError(field.child('selector'), 'selector does not match labels.'));
  }
  return errs;
}
