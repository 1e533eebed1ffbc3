/**
 * The PersistentVolumeClaim a DataVolume makes for an import or upload: the rendered claim
 * spec (claim-spec.ts) with CDI's labels and annotations (what it imports from, the
 * importer pod's name, an upload's request for its pod), owned by the DataVolume.
 */
import type { DataVolume } from '../../api/generated/cdi/types';
import { UPLOAD_REQUEST_ANNOTATION } from '../common/cdi-upload';
import { controllerRef } from '../common/owner-ref';
import { CdiLabels } from './annotations';
import type { ClaimSpec } from './claim-spec';
import type { ClaimObject } from './datavolume-controller';
import { importerPodName } from './importer-pod';

/**
 * A claim for DataVolume `dv` (its name and namespace, CDI's app label over the
 * DataVolume's labels, owned by it, annotated with its uid and content type) with `spec`
 * and the source-specific `annotations` (an import's or a clone's).
 */
export function claimForDataVolume<S extends ClaimSpec>(
  dv: DataVolume,
  spec: S,
  annotations: Record<string, string>,
): ClaimObject & { spec: S } {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: dv.metadata?.name,
      namespace: dv.metadata?.namespace,
      labels: { [CdiLabels.app]: CdiLabels.appValue, ...(dv.metadata?.labels ?? {}) },
      annotations: {
        [CdiLabels.createdForDataVolume]: dv.metadata?.uid ?? '',
        [CdiLabels.contentType]: dv.spec.contentType || 'kubevirt',
        ...annotations,
      },
      ownerReferences: [controllerRef('cdi.kubevirt.io/v1beta1', 'DataVolume', dv)],
    },
    spec,
  };
}

/** The claim of an import or upload DataVolume, with what CDI's importer reads from it. */
export function dataVolumeClaim(dv: DataVolume, spec: ClaimSpec): ClaimObject {
  const src = dv.spec.source ?? {};
  return claimForDataVolume(dv, spec, {
    // An upload's claim asks the upload controller for its pod (CDI's annotation).
    ...(src.upload ? { [UPLOAD_REQUEST_ANNOTATION]: '' } : {}),
    [CdiLabels.importSource]: src.http ? 'http' : src.registry ? 'registry' : src.upload ? 'upload' : 'none',
    ...(src.http ? { [CdiLabels.importEndpoint]: src.http.url } : {}),
    ...(src.registry?.url
      ? {
          [CdiLabels.importEndpoint]: src.registry.url,
          [CdiLabels.registryImportMethod]: src.registry.pullMethod ?? 'pod',
        }
      : {}),
    [CdiLabels.importPodName]: importerPodName(dv.metadata?.name ?? ''),
  });
}
