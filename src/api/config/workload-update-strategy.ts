/**
 * The KubeVirt CR's `spec.workloadUpdateStrategy` (upstream's KubeVirtWorkloadUpdateStrategy):
 * how virt-controller's workload updater moves VMIs whose launcher runs an outdated image
 * after an upgrade. `workloadUpdateMethods` LiveMigrate and/or Evict (empty: no automated
 * update, upstream's default), `batchEvictionSize` (default 10) VMIs evicted per
 * `batchEvictionInterval` (default 1m). Checked here for virt-api's `/kubevirt-validate`
 * and the operator; read here by the updater.
 */
import { parseDuration } from '../duration';
import { type FieldError, fieldError } from '../errors';
import type { KubeVirtWorkloadUpdateStrategy } from '../generated/types';

/** upstream's WorkloadUpdateMethod values. */
export const WORKLOAD_UPDATE_METHODS = ['LiveMigrate', 'Evict'] as const;

/** upstream's defaultBatchDeletionCount and defaultBatchDeletionIntervalSeconds. */
export const DEFAULT_BATCH_EVICTION_SIZE = 10;
export const DEFAULT_BATCH_EVICTION_INTERVAL_MS = 60_000;

/** The strategy in force. */
export interface WorkloadUpdateSettings {
  liveMigrate: boolean;
  evict: boolean;
  batchEvictionSize: number;
  batchEvictionIntervalMs: number;
}

const PATH = 'spec.workloadUpdateStrategy';

/** Problems of `s`, with their field paths. */
export function validateWorkloadUpdateStrategy(s: KubeVirtWorkloadUpdateStrategy | undefined): FieldError[] {
  if (!s) return [];
  const errors: FieldError[] = [];
  const methods = s.workloadUpdateMethods ?? [];
  if (!Array.isArray(methods)) return [fieldError(`${PATH}.workloadUpdateMethods`, 'must be a list')];
  methods.forEach((m, i) => {
    if (!(WORKLOAD_UPDATE_METHODS as readonly string[]).includes(m))
      errors.push(
        fieldError(
          `${PATH}.workloadUpdateMethods[${i}]`,
          `${JSON.stringify(m)} is not ${WORKLOAD_UPDATE_METHODS.join(' or ')}`,
          'FieldValueNotSupported',
        ),
      );
    else if (methods.indexOf(m) !== i)
      errors.push(
        fieldError(`${PATH}.workloadUpdateMethods[${i}]`, `${m} is listed twice`, 'FieldValueDuplicate'),
      );
  });
  const size = s.batchEvictionSize;
  if (size !== undefined && (!Number.isInteger(size) || size < 1))
    errors.push(fieldError(`${PATH}.batchEvictionSize`, `${size} is not a whole number >= 1`));
  if (s.batchEvictionInterval !== undefined) {
    try {
      parseDuration(String(s.batchEvictionInterval), `${PATH}.batchEvictionInterval`);
    } catch (e) {
      errors.push(fieldError(`${PATH}.batchEvictionInterval`, (e as Error).message.replace(/^[^:]*: /, '')));
    }
  }
  return errors;
}

/** The settings of a valid strategy (upstream's defaults for what it leaves out). */
export function workloadUpdateSettings(
  s: KubeVirtWorkloadUpdateStrategy | undefined,
): WorkloadUpdateSettings {
  const methods = s?.workloadUpdateMethods ?? [];
  return {
    liveMigrate: methods.includes('LiveMigrate'),
    evict: methods.includes('Evict'),
    batchEvictionSize: s?.batchEvictionSize ?? DEFAULT_BATCH_EVICTION_SIZE,
    batchEvictionIntervalMs:
      s?.batchEvictionInterval === undefined
        ? DEFAULT_BATCH_EVICTION_INTERVAL_MS
        : parseDuration(String(s.batchEvictionInterval), `${PATH}.batchEvictionInterval`),
  };
}
