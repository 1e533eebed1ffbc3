/**
 * How the operator marks what it installed, as upstream's virt-operator does: the label
 * `app.kubernetes.io/managed-by: virt-operator` (it lists its objects by it, and deletes
 * those that are no longer wanted), the `kubevirt.io/install-strategy-version`,
 * `-registry` and `-identifier` annotations (the version and registry it was rendered for,
 * and a hash of the desired object: a changed hash means the object is updated), and the
 * CR's generation in `kubevirt.io/generation`.
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

/** A copy of `obj` with the operator's label and annotations. */
export function stamp<T extends KubeObject>(obj: T, s: InstallStrategy): T {
  const hash = desiredHash(obj);
  const md = obj.metadata ?? {};
  return {
    ...obj,
    metadata: {
      ...md,
      labels: { ...md.labels, [MANAGED_BY_LABEL]: MANAGED_BY },
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
