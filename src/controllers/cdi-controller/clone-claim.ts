/**
 * The claim of a clone DataVolume (CDI's clone validation and csi-clone / smart-clone
 * claim): checks the target against its source, and renders the PVC whose `dataSource`
 * is the source PVC or VolumeSnapshot, which the CSI provisioner then makes as a clone or
 * restore of it.
 */
import type { DataVolume, StorageProfile } from '../../api/generated/cdi/types';
import { bytesOf } from '../common/quantity';
import type { ClaimSpec, StorageClassInfo } from './claim-spec';
import { CLONE_TYPE_ANNOTATION, type CloneSource, SELECTED_NODE_ANNOTATION } from './clone-source';
import { claimForDataVolume } from './datavolume-claim';
import type { ClaimObject } from './datavolume-controller';

/** Why a clone cannot be made: CDI's reason and a message naming the field. */
export interface CloneProblem {
  reason: string;
  message: string;
}

/** What the checks compare. */
export interface CloneTarget {
  source: CloneSource;
  sourceBytes: number;
  /** The source claim (of a snapshot: the claim it was taken of, when still there). */
  sourceClaim?: ClaimObject;
  spec: ClaimSpec;
  /** `spec.pvc` or `spec.storage`. */
  field: string;
  profile?: StorageProfile;
}

/**
 * CDI's clone validation where a host-assisted copy would be its fallback (none is
 * built): the profile's strategy, one StorageClass (the provisioner clones within a class),
 * one volume mode, and a target at least the source's size.
 */
export function cloneProblem(t: CloneTarget): CloneProblem | undefined {
  const { source, spec, field } = t;
  const from = `${source.namespace}/${source.name}`;
  const strategy = t.profile?.status?.cloneStrategy;
  if (strategy && strategy !== 'csi-clone' && source.kind === 'pvc')
    return {
      reason: 'CloneValidationFailed',
      message: `StorageProfile ${t.profile?.metadata?.name} cloneStrategy ${strategy} is not supported: only csi-clone (the CSI driver's own clone) is built; there is no host-assisted copy`,
    };
  if (source.kind === 'pvc' && t.sourceClaim) {
    const srcClass = t.sourceClaim.spec?.storageClassName ?? '';
    if (srcClass !== (spec.storageClassName ?? ''))
      return {
        reason: 'IncompatibleProvisioners',
        message: `${field}.storageClassName: the source PVC ${from} is on StorageClass ${JSON.stringify(srcClass)} and the clone on ${JSON.stringify(spec.storageClassName ?? '')}: a CSI clone stays in one class (no host-assisted copy between classes)`,
      };
    const srcMode = t.sourceClaim.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem';
    if (srcMode !== spec.volumeMode)
      return {
        reason: 'IncompatibleVolumeModes',
        message: `${field}.volumeMode: the source PVC ${from} is ${srcMode} and the clone ${spec.volumeMode}: the volume modes of source and target are incompatible (no host-assisted copy)`,
      };
  }
  const size = `${field}.resources.requests.storage`;
  const targetBytes = Number(bytesOf(spec.resources.requests.storage, size) ?? 0);
  // CDI compares a source claim's request (ValidateRequestedCloneSize), not the capacity the
  // driver rounded it up to (4 KiB here), which would refuse a clone of the source's own size.
  const request = source.kind === 'pvc' ? t.sourceClaim?.spec?.resources?.requests?.storage : undefined;
  const minBytes = request === undefined ? t.sourceBytes : Number(bytesOf(request, size) ?? 0);
  if (targetBytes < minBytes)
    return {
      reason: 'CloneValidationFailed',
      message: `${size}: target resources requests storage size is smaller than the source (${targetBytes} < ${minBytes} bytes)`,
    };
  return undefined;
}

/** The clone's PVC: the DataVolume's name, owned by it, `dataSource` its source. */
export function cloneClaim(
  dv: DataVolume,
  t: CloneTarget,
  cls: StorageClassInfo | undefined,
): ClaimObject & { spec: ClaimSpec & { dataSource: Record<string, string> } } {
  const node = t.sourceClaim?.metadata?.annotations?.[SELECTED_NODE_ANNOTATION];
  // The clone can only be where its source's pool is: a WaitForFirstConsumer class gets
  // the source's node at once, as a consumer pod there would select it.
  const selected: Record<string, string> =
    cls?.volumeBindingMode === 'WaitForFirstConsumer' && node ? { [SELECTED_NODE_ANNOTATION]: node } : {};
  const dataSource: Record<string, string> =
    t.source.kind === 'pvc'
      ? { kind: 'PersistentVolumeClaim', name: t.source.name }
      : { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: t.source.name };
  return claimForDataVolume(
    dv,
    { ...t.spec, dataSource },
    { [CLONE_TYPE_ANNOTATION]: t.source.kind === 'pvc' ? 'csi-clone' : 'snapshot', ...selected },
  );
}
