/**
 * VirtualMachineInstanceMigration defaulting, as upstream's migration mutator: the
 * `kubevirt.io/vmi-name` selector label and the migration finalizer.
 */
import type { VirtualMachineInstanceMigration } from '../generated/types';
import { cloneJson } from '../json-clone';
import { Finalizers, Labels } from '../labels';

/** Defaults a migration and returns the new object. */
export function defaultVirtualMachineInstanceMigration(
  migration: VirtualMachineInstanceMigration,
): VirtualMachineInstanceMigration {
  const out: VirtualMachineInstanceMigration = cloneJson(migration);
  out.metadata ??= {};
  const meta = out.metadata;
  meta.labels = { ...(meta.labels ?? {}), [Labels.migrationSelector]: out.spec?.vmiName ?? '' };
  const finalizers = meta.finalizers ?? [];
  if (!finalizers.includes(Finalizers.migration)) meta.finalizers = [...finalizers, Finalizers.migration];
  return out;
}
