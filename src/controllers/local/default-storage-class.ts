/**
 * Kubernetes' default StorageClass for claims that name none, for a control plane without
 * kube-controller-manager (local mode). Since Kubernetes 1.28 the PV controller assigns
 * it retroactively (RetroactiveDefaultStorageClass, GA): a Pending claim with no
 * `spec.storageClassName` (nil, not "") and no volume named, that no class-less volume
 * fits, gets the default class written into its spec; the DefaultStorageClass admission
 * plugin does the same at creation on a real API server. With that class the local
 * provisioner provisions it, as on a cluster.
 */
import type { KubeObject } from '../runtime/types';

/** Kubernetes' default-class annotations (the GA one and the beta one it still honours). */
const DEFAULT_ANNOTATIONS = [
  'storageclass.kubernetes.io/is-default-class',
  'storageclass.beta.kubernetes.io/is-default-class',
];
/** The beta annotation that names a claim's class in place of the field. */
const BETA_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

/**
 * The default class among `classes` as Kubernetes' `GetDefaultClass` picks it: of those
 * annotated default, the newest (creationTimestamp), then the first by name.
 */
export function defaultStorageClass<C extends KubeObject>(classes: readonly C[]): C | undefined {
  const created = (c: KubeObject) => new Date(c.metadata?.creationTimestamp ?? 0).getTime() || 0;
  return classes
    .filter((c) => DEFAULT_ANNOTATIONS.some((a) => c.metadata?.annotations?.[a] === 'true'))
    .sort(
      (a, b) => created(b) - created(a) || String(a.metadata?.name).localeCompare(String(b.metadata?.name)),
    )[0];
}

/**
 * Whether a claim asked for no class (`PersistentVolumeClaimHasClass` is false): neither
 * the field, even empty, nor the beta annotation.
 */
export function claimNamesNoClass(claim: {
  metadata?: { annotations?: Record<string, string> };
  spec?: { storageClassName?: string };
}): boolean {
  return (
    claim.spec?.storageClassName === undefined &&
    claim.metadata?.annotations?.[BETA_CLASS_ANNOTATION] === undefined
  );
}
