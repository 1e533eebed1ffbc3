/**
 * Rules for the KubeVirt CR's `spec.configuration.migrations`: counts and timeouts are
 * whole numbers (the limits at least 1: 0 would hold every migration forever), the
 * bandwidth a non-negative quantity, and the settings kubevirt-ts does not implement are
 * refused with the reason (field-support/migration-fields.ts) rather than ignored.
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { MigrationConfiguration } from '../generated/types';
import { migrationConfigurationFieldSupport } from '../validation/field-support/migration-fields';
import { validateUnsupportedFields } from '../validation/unsupported-fields';
import { parseQuantity } from './quantity';

/** A quantity string that parses and is not negative. */
export function isNonNegativeQuantity(v: unknown): boolean {
  if (typeof v !== 'string' && typeof v !== 'number') return false;
  try {
    const q = parseQuantity(String(v));
    return !!q && q.num >= 0n;
  } catch {
    return false;
  }
}

/** Problems with `migrations` at `field`. */
export function validateMigrationConfiguration(
  m: MigrationConfiguration | undefined,
  field: FieldPath,
): FieldError[] {
  if (!m) return [];
  const errs: FieldError[] = [];
  const whole = (k: keyof MigrationConfiguration, min: number) => {
    const v = m[k];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= min))
      errs.push(
        fieldError(field.child(k), `Invalid value: ${JSON.stringify(v)}: must be a whole number >= ${min}`),
      );
  };
  whole('parallelMigrationsPerCluster', 1);
  whole('parallelOutboundMigrationsPerNode', 1);
  whole('completionTimeoutPerGiB', 0);
  whole('progressTimeout', 0);
  // libvirt's max downtime: at least 1 ms (QEMU takes no 0).
  whole('maxDowntimeMs', 1);
  if (m.bandwidthPerMigration !== undefined && !isNonNegativeQuantity(m.bandwidthPerMigration))
    errs.push(
      fieldError(
        field.child('bandwidthPerMigration'),
        `Invalid value: ${JSON.stringify(m.bandwidthPerMigration)}: not a non-negative quantity`,
      ),
    );
  errs.push(...validateUnsupportedFields(field, m, migrationConfigurationFieldSupport));
  return errs;
}
