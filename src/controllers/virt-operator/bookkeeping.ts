/**
 * How the operator marks what it installed, as upstream's virt-operator does: the label
 * `app.kubernetes.io/managed-by: virt-operator` (it lists its objects by it, and deletes
 * those that are no longer wanted), the `kubevirt.io/install-strategy-version`,
 * `-registry` and `-identifier` annotations (the version and registry it was rendered for,
 * and a hash of the desired object: a changed hash means the object is updated), and the
 * CR's generation in `kubevirt.io/generation`. The VolumeSnapshot CRDs are created only where
 * absent and marked `kubevirt-ts.io/created-if-absent-by` instead of managed-by.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../runtime/types';

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'virt-operator';
export const VERSION_ANNOTATION = 'kubevirt.io/install-strategy-version';
export const REGISTRY_ANNOTATION = 'kubevirt.io/install-strategy-registry';
export const IDENTIFIER_ANNOTATION = 'kubevirt.io/install-strategy-identifier';
export const GENERATION_ANNOTATION = 'kubevirt.io/generation';
/**
 * On objects outside the install's namespace (virt-api's RoleBinding in kube-system): the
 * install's namespace, so the operator finds its own there and not another install's.
 */
export const INSTALL_NAMESPACE_LABEL = 'kubevirt.io/install-namespace';
/** Namespaces besides the install's own that the rendering puts objects in. */
export const FOREIGN_NAMESPACES = ['kube-system'] as const;
/**
 * On objects the operator creates only where absent and afterwards neither updates nor
 * deletes, not even when the KubeVirt CR is removed: the VolumeSnapshot CRDs. They belong to
 * the CSI snapshot stack (external-snapshotter's manifests install them; upstream's
 * virt-operator does not own them), and deleting a CRD deletes every object of its kinds,
 * every user's VolumeSnapshots. The value names who created the object. Such objects carry
 * no managed-by label, so no pass lists them as the install's.
 */
export const CREATED_IF_ABSENT_LABEL = 'kubevirt-ts.io/created-if-absent-by';
/** The KubeVirt CR's finalizer (upstream's). */
export const KUBEVIRT_FINALIZER = 'foregroundDeleteKubeVirt';

/** What the objects of one install were rendered for. */
export interface InstallStrategy {
  version: string;
  registry: string;
  generation: number;
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/** A hash of the object as rendered (before the server adds defaults). */
export function desiredHash(obj: KubeObject): string {
  return createHash('sha256').update(stableJson(obj)).digest('hex').slice(0, 32);
}

/** A copy of `obj` to be created only where absent (see CREATED_IF_ABSENT_LABEL). */
export function markCreatedIfAbsent<T extends KubeObject>(obj: T): T {
  const md = obj.metadata ?? {};
  return { ...obj, metadata: { ...md, labels: { ...md.labels, [CREATED_IF_ABSENT_LABEL]: MANAGED_BY } } };
}

/** True for an object marked by {@link markCreatedIfAbsent}. */
export function createdIfAbsent(obj: KubeObject): boolean {
  return obj.metadata?.labels?.[CREATED_IF_ABSENT_LABEL] !== undefined;
}

/**
 * A copy of `obj` with the operator's label and annotations; one created only where absent
 * gets the annotations but not the label.
 */
export function stamp<T extends KubeObject>(obj: T, s: InstallStrategy): T {
  const hash = desiredHash(obj);
  const md = obj.metadata ?? {};
  const managed = createdIfAbsent(obj) ? {} : { [MANAGED_BY_LABEL]: MANAGED_BY };
  return {
    ...obj,
    metadata: {
      ...md,
      labels: { ...md.labels, ...managed },
      annotations: {
        ...md.annotations,
        [VERSION_ANNOTATION]: s.version,
        [REGISTRY_ANNOTATION]: s.registry,
        [IDENTIFIER_ANNOTATION]: hash,
        [GENERATION_ANNOTATION]: String(s.generation),
      },
    },
  };
}

/** True when the live object was written from the same rendering as `desired` (both stamped). */
export function upToDate(live: KubeObject, desired: KubeObject): boolean {
  return (
    live.metadata?.annotations?.[IDENTIFIER_ANNOTATION] ===
    desired.metadata?.annotations?.[IDENTIFIER_ANNOTATION]
  );
}
