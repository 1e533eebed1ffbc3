/**
 * Where a clone DataVolume's data comes from (CDI's clone sources): `source.pvc`,
 * `source.snapshot`, or `sourceRef` to a DataSource whose `source.pvc` / `source.snapshot`
 * (through at most one other DataSource, as CDI's ResolveDataSourceChain) names it.
 * Pure functions over the objects the controller's caches hold.
 */
import type { DataSource, DataVolume } from '../../api/generated/cdi/types';

/** A VolumeSnapshot as the clone reads it. */
export interface VolumeSnapshotObject {
  metadata?: { name?: string; namespace?: string; uid?: string };
  spec?: { source?: { persistentVolumeClaimName?: string } };
  status?: { readyToUse?: boolean; restoreSize?: string; error?: { message?: string } };
}

/** The resolved source of a clone. */
export interface CloneSource {
  kind: 'pvc' | 'snapshot';
  namespace: string;
  name: string;
  /** The DataSource it came through, `namespace/name`. */
  via?: string;
}

/** Why no source could be resolved: CDI's reason and message. */
export interface CloneSourceProblem {
  reason: string;
  message: string;
}

/** True when `dv` copies another volume (a clone, snapshot or DataSource source). */
export function isCloneDataVolume(dv: DataVolume): boolean {
  return Boolean(dv.spec?.source?.pvc || dv.spec?.source?.snapshot || dv.spec?.sourceRef);
}

/** CDI's reasons for a DataSource that cannot be resolved. */
export const DataSourceReason = {
  NotFound: 'NotFound',
  CrossNamespaceReference: 'CrossNamespaceReference',
  SelfReference: 'SelfReference',
  MaxReferenceDepthReached: 'MaxReferenceDepthReached',
  NoSource: 'NoSource',
} as const;

/**
 * A DataSource's own source, following `source.dataSource` one step (CDI's
 * ResolveDataSourceChain: same namespace only, no self reference, depth 1).
 */
export function resolveDataSource(
  ds: DataSource,
  dataSourceOf: (key: string) => DataSource | undefined,
): { source: CloneSource } | { problem: CloneSourceProblem } {
  const ns = ds.metadata?.namespace ?? '';
  let resolved = ds;
  const ref = ds.spec?.source?.dataSource;
  if (ref) {
    const refNs = ref.namespace || ns;
    if (refNs !== ns)
      return {
        problem: {
          reason: DataSourceReason.CrossNamespaceReference,
          message: 'DataSource cannot reference a DataSource in another namespace',
        },
      };
    if (ref.name === ds.metadata?.name)
      return {
        problem: { reason: DataSourceReason.SelfReference, message: 'DataSource cannot self-reference' },
      };
    const next = dataSourceOf(`${refNs}/${ref.name}`);
    if (!next)
      return {
        problem: {
          reason: DataSourceReason.NotFound,
          message: `datasources.cdi.kubevirt.io "${ref.name}" not found`,
        },
      };
    if (next.spec?.source?.dataSource)
      return {
        problem: {
          reason: DataSourceReason.MaxReferenceDepthReached,
          message: 'DataSource reference chain exceeds maximum depth of 1',
        },
      };
    resolved = next;
  }
  const via = `${ns}/${ds.metadata?.name ?? ''}`;
  const rns = resolved.metadata?.namespace ?? ns;
  const { pvc, snapshot } = resolved.spec?.source ?? {};
  if (pvc?.name) return { source: { kind: 'pvc', namespace: pvc.namespace || rns, name: pvc.name, via } };
  if (snapshot?.name)
    return { source: { kind: 'snapshot', namespace: snapshot.namespace || rns, name: snapshot.name, via } };
  return { problem: { reason: DataSourceReason.NoSource, message: 'No source PVC set' } };
}

/** The source a clone DataVolume names, resolving its `sourceRef`. */
export function cloneSourceOf(
  dv: DataVolume,
  dataSourceOf: (key: string) => DataSource | undefined,
): { source: CloneSource } | { problem: CloneSourceProblem } {
  const ns = dv.metadata?.namespace ?? '';
  const s = dv.spec?.source;
  if (s?.pvc) return { source: { kind: 'pvc', namespace: s.pvc.namespace || ns, name: s.pvc.name } };
  if (s?.snapshot)
    return { source: { kind: 'snapshot', namespace: s.snapshot.namespace || ns, name: s.snapshot.name } };
  const ref = dv.spec?.sourceRef;
  const refNs = ref?.namespace || ns;
  const ds = ref ? dataSourceOf(`${refNs}/${ref.name}`) : undefined;
  if (!ds)
    return {
      problem: {
        reason: 'CloneWithoutSource',
        message: `The source datasource ${refNs}/${ref?.name ?? ''} doesn't exist`,
      },
    };
  return resolveDataSource(ds, dataSourceOf);
}

/** CDI's clone annotation on the DataVolume and its claim: the strategy used. */
export const CLONE_TYPE_ANNOTATION = 'cdi.kubevirt.io/cloneType';
/** The scheduler's annotation a WaitForFirstConsumer claim is provisioned on. */
export const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node';

type PodShape = {
  status?: { phase?: string };
  spec?: {
    volumes?: { name?: string; persistentVolumeClaim?: { claimName?: string; readOnly?: boolean } }[];
    containers?: {
      volumeMounts?: { name?: string; readOnly?: boolean }[];
      volumeDevices?: { name?: string }[];
    }[];
  };
};

/**
 * A pod that has not ended and holds `claim` read-write (CDI's GetPodsUsingPVCs with
 * read-only users allowed): a read-only claim volume, or one every container mounts
 * read-only, does not count; a block device does (it cannot be handed over read-only).
 */
export function podUsesClaimReadWrite(pod: PodShape, claim: string): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  const containers = pod.spec?.containers ?? [];
  return (pod.spec?.volumes ?? []).some((v) => {
    if (v.persistentVolumeClaim?.claimName !== claim || v.persistentVolumeClaim.readOnly) return false;
    return containers.some(
      (c) =>
        (c.volumeMounts ?? []).some((m) => m.name === v.name && !m.readOnly) ||
        (c.volumeDevices ?? []).some((d) => d.name === v.name),
    );
  });
}
