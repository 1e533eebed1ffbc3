/**
 * Validation of a VirtualMachineInstanceMigration (upstream's migration create admitter,
 * the parts that need no cluster lookups): a VMI name, and decentralized migration
 * fields only behind their feature gate.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceMigration } from '../generated/types';
import { isDNS1123Subdomain, validateObjectMeta } from './names';

/** Validates a VirtualMachineInstanceMigration; returns every error with its field path. */
export function validateVirtualMachineInstanceMigration(
  migration: VirtualMachineInstanceMigration,
  config: ClusterConfig,
): FieldError[] {
  const field = FieldPath.of('spec');
  const errs = validateObjectMeta(migration.metadata);
  if (!config.isFeatureGateEnabled(FeatureGate.LiveMigration)) {
    errs.push(fieldError('', 'LiveMigration feature gate is not enabled in kubevirt-config'));
  }
  const spec = migration.spec ?? {};
  if (!spec.vmiName) {
    errs.push(fieldError(field.child('vmiName'), 'vmiName is missing', 'FieldValueRequired'));
    return errs;
  }
  for (const m of isDNS1123Subdomain(spec.vmiName)) {
    errs.push(fieldError(field.child('vmiName'), `Invalid value: ${JSON.stringify(spec.vmiName)}: ${m}`));
  }
  if ((spec.sendTo || spec.receive) && !config.isFeatureGateEnabled(FeatureGate.DecentralizedLiveMigration)) {
    errs.push(
      fieldError(
        field.child(spec.sendTo ? 'sendTo' : 'receive'),
        `${FeatureGate.DecentralizedLiveMigration} feature gate is not enabled in kubevirt-config`,
      ),
    );
  }
  if (spec.sendTo && spec.receive) {
    errs.push(fieldError(field, 'sendTo and receive are mutually exclusive'));
  }
  return errs;
}
