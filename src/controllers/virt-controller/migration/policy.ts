/**
 * MigrationPolicy selection and the migration's effective configuration, as upstream's
 * migration controller (watch/migration/migrationpolicy.go, resolveMigrationConfig): the
 * policy whose selectors all match the VMI's and its namespace's labels and that matches
 * the most labels wins (equal counts: more VMI labels, then the lexicographically first
 * name); its fields override the KubeVirt CR's `spec.configuration.migrations`, and the
 * result is what the handlers migrate with (`status.migrationState.migrationConfiguration`).
 * Pure but for the namespace's labels, read only when a policy exists.
 */
import type {
  MigrationConfiguration,
  MigrationPolicy,
  VirtualMachineInstance,
  VMIMConfigurationOptions,
} from '../../../api/generated/types';

type Labels = Record<string, string> | undefined;

interface Score {
  vmi: number;
  ns: number;
}

/** How many of `selector`'s labels `labels` has, or undefined when one is missing. */
function matching(selector: Labels, labels: Labels): number | undefined {
  let n = 0;
  for (const [k, v] of Object.entries(selector ?? {})) {
    if (labels?.[k] !== v) return undefined;
    n++;
  }
  return n;
}

/**
 * The score of a policy for the labels, or undefined when it does not match. A policy
 * without `selectors` matches nothing; empty selectors match everything with score 0
 * (upstream's). Where upstream skips a selector when the VMI has no labels at all (so a
 * VMI selector would match a VMI without labels), a missing label here is a mismatch.
 */
function score(p: MigrationPolicy, vmiLabels: Labels, nsLabels: Labels): Score | undefined {
  const sel = p.spec?.selectors;
  if (!sel) return undefined;
  const vmi = matching(sel.virtualMachineInstanceSelector, vmiLabels);
  if (vmi === undefined) return undefined;
  const ns = matching(sel.namespaceSelector, nsLabels);
  if (ns === undefined) return undefined;
  return { vmi, ns };
}

const better = (a: Score, b: Score) =>
  a.vmi + a.ns !== b.vmi + b.ns ? a.vmi + a.ns > b.vmi + b.ns : a.vmi > b.vmi;
const same = (a: Score, b: Score) => a.vmi === b.vmi && a.ns === b.ns;

/** The policy upstream's matchPolicy picks for a VMI, or undefined. */
export function matchMigrationPolicy(
  policies: readonly MigrationPolicy[],
  vmiLabels: Labels,
  namespaceLabels: Labels,
): MigrationPolicy | undefined {
  let best: { p: MigrationPolicy; s: Score } | undefined;
  for (const p of policies) {
    const s = score(p, vmiLabels, namespaceLabels);
    if (!s) continue;
    const name = p.metadata?.name ?? '';
    if (!best || better(s, best.s) || (same(s, best.s) && name < (best.p.metadata?.name ?? '')))
      best = { p, s };
  }
  return best?.p;
}

/** upstream's ToVMIMConfigurationOptions: the cluster's migration configuration, copied. */
export function clusterMigrationOptions(cfg: Readonly<MigrationConfiguration>): VMIMConfigurationOptions {
  const keys = [
    'allowAutoConverge',
    'bandwidthPerMigration',
    'completionTimeoutPerGiB',
    'maxDowntimeMs',
    'progressTimeout',
    'utilityVolumesTimeout',
    'unsafeMigrationOverride',
    'allowPostCopy',
    'allowWorkloadDisruption',
    'matchSELinuxLevelOnMigration',
    'parallelOutboundMigrationsPerNode',
    'nodeDrainTaintKey',
    'parallelMigrationsPerCluster',
    'disableTLS',
    'network',
  ] as const;
  const out: Record<string, unknown> = {};
  for (const k of keys) if (cfg[k] !== undefined) out[k] = structuredClone(cfg[k]);
  return out as VMIMConfigurationOptions;
}

/**
 * upstream's applyMigrationPolicySpec: the policy's set fields over `base`; a policy that
 * sets allowPostCopy but not allowWorkloadDisruption sets both (upstream's backward
 * compatibility).
 */
export function withMigrationPolicy(
  base: VMIMConfigurationOptions,
  policy: MigrationPolicy['spec'],
): VMIMConfigurationOptions {
  const out = structuredClone(base);
  if (policy.allowWorkloadDisruption === undefined && policy.allowPostCopy !== undefined)
    out.allowWorkloadDisruption = policy.allowPostCopy;
  for (const k of [
    'allowAutoConverge',
    'bandwidthPerMigration',
    'completionTimeoutPerGiB',
    'maxDowntimeMs',
    'allowPostCopy',
    'allowWorkloadDisruption',
  ] as const) {
    if (policy[k] !== undefined) (out as Record<string, unknown>)[k] = policy[k];
  }
  return out;
}

/**
 * The migration's effective configuration (upstream's resolveMigrationConfig): the
 * cluster's, overridden by the policy matching the VMI and its namespace, and that
 * policy's name.
 */
export async function effectiveMigrationConfiguration(
  vmi: VirtualMachineInstance,
  cluster: Readonly<MigrationConfiguration>,
  policies: readonly MigrationPolicy[],
  namespaceLabels?: (namespace: string) => Promise<Labels>,
): Promise<{ configuration: VMIMConfigurationOptions; policyName?: string }> {
  const base = clusterMigrationOptions(cluster);
  if (policies.length === 0) return { configuration: base };
  const nsLabels = await namespaceLabels?.(vmi.metadata?.namespace ?? '');
  const policy = matchMigrationPolicy(policies, vmi.metadata?.labels, nsLabels);
  if (!policy) return { configuration: base };
  return { configuration: withMigrationPolicy(base, policy.spec), policyName: policy.metadata?.name };
}
